import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BulkWriteRunningError, DuplicateBarcodeError, UndoCutShortError } from '../catalogue/errors.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { errorCode, errorMessage } from '../error-details.js';
import { SchemaNotCurrentError } from '../storage/migrations.js';
import { openStore } from '../storage/open-store.js';
import type { CatalogueStore } from '../storage/store.js';
import { StoppedBySignal } from './bulk-progress.js';
import { formatOfPath, type FileFormat } from './product-rows.js';
import { UnreadableFileError } from './unreadable-file.js';

/** How long a command's write waits for the catalogue's write lock, at the least. */
const COMMAND_WRITE_WAIT_MS = 60_000;

/** The exit statuses every command keeps (docs/OPERATIONS.md lists them). */
export const EXIT = Object.freeze({ done: 0, failed: 1, usage: 2 });

/** One subcommand of `catalogue`. */
export interface Command {
  readonly name: string;
  /** One line for the list of commands. */
  readonly summary: string;
  /** The whole `--help` text, usage line first. */
  readonly help: string;
  /** Runs with the arguments after the command's name; resolves to the exit status. */
  run(args: readonly string[]): Promise<number>;
}

export interface OptionSpec {
  /** `optional`: a flag that may be given a value after an equals sign (`--wait`, `--wait=60`). */
  readonly type: 'boolean' | 'string' | 'optional';
  readonly short?: string;
}

/** The command line was wrong: nothing was done. Shown with a pointer to `--help`, exit status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The command ran and failed; its message is the whole report. Exit status 1. */
export class CommandFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandFailure';
  }
}

export interface ParsedArguments {
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
}

/**
 * Reads a command's arguments. `-h` or `--help` anywhere before `--` wins over every other argument,
 * even a wrong one, so that asking for help never runs the command and never fails.
 *
 * @returns `'help'` when help was asked for.
 * @throws UsageError for an unknown option, a missing value, or a value given to a flag.
 */
export function readArguments(args: readonly string[], options: Readonly<Record<string, OptionSpec>>): ParsedArguments | 'help' {
  // An optional value is read as a flag's: a value after a space would be the next argument.
  const parsed = Object.fromEntries(Object.entries(options).map(([name, spec]) => [name, { ...spec, type: spec.type === 'optional' ? 'boolean' : spec.type }]));
  const { tokens } = parseArgs({
    args: [...args],
    options: { ...parsed, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  if (tokens.some((token) => token.kind === 'option' && token.name === 'help')) return 'help';

  const values: Record<string, string | boolean | undefined> = {};
  const positionals: string[] = [];
  for (const [at, token] of tokens.entries()) {
    if (token.kind === 'positional') positionals.push(token.value);
    if (token.kind !== 'option') continue;
    const spec = options[token.name];
    if (spec === undefined) throw new UsageError(`Unknown option ${token.rawName}.`);
    if (spec.type === 'optional') {
      // `--wait 60` would wait without limit and take 60 for a FILE or a barcode.
      const next = tokens[at + 1];
      if (token.value === undefined && next?.kind === 'positional' && /^[0-9]{1,6}$/.test(next.value)) {
        throw new UsageError(`Give ${token.rawName} its value after an equals sign: ${token.rawName}=${next.value}.`);
      }
      values[token.name] = token.value ?? true;
    } else if (spec.type === 'boolean') {
      if (token.value !== undefined) throw new UsageError(`${token.rawName} takes no value.`);
      values[token.name] = true;
    } else {
      if (token.value === undefined) throw new UsageError(`${token.rawName} needs a value.`);
      values[token.name] = token.value;
    }
  }
  return { values, positionals };
}

/** The longest `--wait=SECONDS`: a day. */
const LONGEST_WAIT_SECONDS = 86_400;

/**
 * How long `--wait[=SECONDS]` says to wait for the bulk write under way: `undefined` without it (do not
 * wait), `Infinity` without SECONDS (as long as it runs).
 *
 * @throws UsageError for SECONDS that are not a whole number from 0 to a day.
 */
export function readWaitSeconds(given: string | boolean | undefined): number | undefined {
  if (given === undefined) return undefined;
  if (given === true) return Infinity;
  if (typeof given !== 'string' || !/^[0-9]+$/.test(given) || Number(given) > LONGEST_WAIT_SECONDS) {
    throw new UsageError(`--wait takes a whole number of seconds from 0 to ${LONGEST_WAIT_SECONDS}, as --wait=600, not ${JSON.stringify(given)}.`);
  }
  return Number(given);
}

/** `--format`, or else the format the file name implies (CSV without a file). */
export function readFormat(given: string | boolean | undefined, path: string | undefined): FileFormat {
  const format = given ?? (path === undefined ? 'csv' : formatOfPath(path));
  if (format !== 'csv' && format !== 'json') throw new UsageError(`--format must be csv or json, not ${JSON.stringify(format)}.`);
  return format;
}

/** The one FILE a bulk command reads, its format and its size (for the progress bar). */
export interface FileToRead {
  readonly path: string;
  readonly format: FileFormat;
  readonly size: number;
}

/**
 * The FILE named by the arguments of a command that reads one (import, restore).
 * @throws UsageError when there is none or more than one, or `--format` is wrong; CommandFailure when it cannot be read.
 */
export function fileToRead(parsed: ParsedArguments, verb: string): FileToRead {
  const [path, ...extra] = parsed.positionals;
  if (path === undefined) throw new UsageError(`Name the FILE to ${verb}.`);
  if (extra.length > 0) throw new UsageError(`Expected one FILE, got ${parsed.positionals.length}.`);
  const format = readFormat(parsed.values['format'], path);
  try {
    return { path, format, size: statSync(path).size };
  } catch (error) {
    throw new CommandFailure(`Cannot read ${path}: ${errorMessage(error)}`);
  }
}

/** What a bulk command reading a file (`import`, `restore`) says when it failed; nothing was written then. */
export function bulkFileFailure(error: unknown, path: string, command: 'import' | 'restore', waited = ''): CommandFailure {
  const done = command === 'import' ? 'imported' : 'restored';
  if (error instanceof UndoCutShortError) return new CommandFailure(`${command[0]!.toUpperCase()}${command.slice(1)} failed: ${error.message}`);
  if (error instanceof StoppedBySignal) return new CommandFailure(`${error.message}; what was written is undone: nothing was ${done}.`);
  if (error instanceof UnreadableFileError) return new CommandFailure(`${path}: ${error.message.replace(/([^.])$/, '$1.')} Nothing was ${done}.`);
  if (error instanceof DuplicateBarcodeError) return new CommandFailure(`${error.message} It was added while the ${command} ran; nothing was ${done}.`);
  if (error instanceof BulkWriteRunningError) return new CommandFailure(`${error.message}${waited} Nothing was ${done}.`);
  return new CommandFailure(`${command[0]!.toUpperCase()}${command.slice(1)} failed; nothing was ${done}: ${errorMessage(error)}`);
}

/**
 * The settings and the store the environment names. The store is migrated as the service's would
 * be: with MIGRATE_ON_START=false it must already be current.
 *
 * @throws CommandFailure when a setting is bad or the database cannot be opened.
 */
export async function openConfiguredStore(): Promise<{ config: Config; store: CatalogueStore }> {
  const config = readConfig();
  try {
    // A command's writes are short steps between the service's; waiting longer than a request would
    // spares an operator a failed import while the service is busy.
    const writeWaitMs = Math.max(config.writeWaitMs, COMMAND_WRITE_WAIT_MS);
    const store = await openStore(config.database, { poolMax: config.dbPoolMax, writeWaitMs, migrate: config.migrateOnStart });
    return { config, store };
  } catch (error) {
    if (error instanceof SchemaNotCurrentError) {
      throw new CommandFailure(`${error.message} Run \`catalogue migrate\` first (MIGRATE_ON_START is false).`);
    }
    throw new CommandFailure(`Cannot open the database: ${errorMessage(error)}`);
  }
}

/** @throws CommandFailure naming each bad setting. */
export function readConfig(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    throw new CommandFailure(error instanceof ConfigError ? error.message : errorMessage(error));
  }
}

/** Whether `error` is a write to a pipe whose reader has gone (`catalogue export | head`). */
export function isBrokenPipe(error: unknown): boolean {
  return errorCode(error) === 'EPIPE';
}
