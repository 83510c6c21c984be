import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { openStore } from '../storage/open-store.js';
import type { CatalogueStore } from '../storage/store.js';
import { formatOfPath, type FileFormat } from './product-rows.js';

/** Ends the command with a message on standard error and exit status 1. */
export function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

/** The command's flags and file names; a wrong flag ends the command with the usage. */
export function readArguments<T extends NonNullable<ParseArgsConfig['options']>>(options: T, usage: string) {
  try {
    return parseArgs({ allowPositionals: true, options });
  } catch (error) {
    return fail(`${describe(error)}\n${usage}`);
  }
}

/** `--format`, or else the format the file name implies (CSV without a file). */
export function readFormat(given: unknown, path: string | undefined, usage: string): FileFormat {
  const format = given ?? (path === undefined ? 'csv' : formatOfPath(path));
  if (format !== 'csv' && format !== 'json') fail(`--format must be csv or json.\n${usage}`);
  return format;
}

/** The settings and the store the environment names; either failing ends the command. */
export async function openConfiguredStore(): Promise<{ config: Config; store: CatalogueStore }> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    fail(error instanceof ConfigError ? error.message : describe(error));
  }
  const store = await openStore(config.database, { poolMax: config.dbPoolMax }).catch((error: unknown) =>
    fail(`Cannot open the database: ${describe(error)}`),
  );
  return { config, store };
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
