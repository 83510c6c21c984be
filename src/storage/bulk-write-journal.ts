import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { BulkWriteRunningError, RestoreRunningError, StoreBusyError, StoreTimeoutError, StoreUnavailableError } from '../catalogue/errors.js';
import type { Database } from './schema.js';
import type { StoreContext } from './store-context.js';
import type { BulkWait, RunningBulkWrite } from './store.js';

/** How often a bulk write shows it is alive (in a step it writes anyway). */
const HEARTBEAT_EVERY_MS = 5_000;

/**
 * A bulk write not seen alive for this long is abandoned (its process died) and is undone by whoever
 * finds it. Well above the longest a step may wait for the write lock (a command waits 60 s).
 */
export const ABANDONED_AFTER_MS = 120_000;

/**
 * How often a bulk write waiting for the one under way looks whether it has ended: a read of one small
 * table, without any lock.
 */
const WAIT_LOOKS_EVERY_MS = 1_000;

/**
 * How long a failed bulk write tries again to undo its steps while the database is away (a restart, a
 * cut connection, a lock): half of ABANDONED_AFTER_MS, so that no other process takes it for abandoned
 * and undoes it at the same time.
 */
export const UNDO_RETRY_MS = ABANDONED_AFTER_MS / 2;

/** Products put back, or journal rows dropped, per transaction while a bulk write is undone or cleaned up. */
const ROWS_PER_UNDO_STEP = 1_000;

/** What a bulk write does, as an operator would name it. */
export type BulkWriteKind = 'import' | 'price list' | 'removal' | 'restore';

/**
 * Whether a restore is under way (or being undone), in SQL: creates are refused meanwhile, from before
 * the restore checks its file until it has finished, as a product created then would be removed by it.
 */
export const RESTORE_UNDER_WAY = "EXISTS (SELECT 1 FROM bulk_write WHERE kind = 'restore')";

/**
 * Refuses a create while a restore is under way; called in the create's transaction, once it holds
 * the write lock (SQLite), so that the restore cannot start between this look and the commit.
 * @throws RestoreRunningError
 */
export async function refuseWhileRestoring(trx: Kysely<Database>): Promise<void> {
  const { rows } = await sql<{ restoring: number | boolean }>`SELECT ${sql.raw(RESTORE_UNDER_WAY)} AS restoring`.execute(trx);
  if (Boolean(rows[0]?.restoring)) throw new RestoreRunningError();
}

/** What undoing a bulk write could not put back. */
export interface UndoOutcome {
  /** Removed products whose barcode another product took meanwhile: they stay removed. */
  readonly notRestored: readonly string[];
}

/**
 * The journal of one bulk write (an import, a price list, a removal), which runs as a series of short
 * transactions, its steps, so that the write lock is never held for long. Each step records in its
 * own transaction how to undo it, so that the bulk write as a whole stays all or nothing: on failure
 * its steps are undone, newest first, also in short transactions; and when its process dies, whoever
 * finds it abandoned (the next bulk write, a running service) undoes it.
 *
 * Meanwhile readers see its steps land one by one: products appear, prices change, products go, and
 * on failure the same in reverse, each with its own version in the change feed.
 */
export class BulkWriteJournal {
  readonly #context: StoreContext;
  readonly #id: number;
  readonly #owner: string;
  #lastBeat: number;
  #longestHoldMs = 0;
  #steps = 0;

  private constructor(context: StoreContext, id: number, owner: string) {
    this.#context = context;
    this.#id = id;
    this.#owner = owner;
    this.#lastBeat = Date.now();
  }

  /**
   * Starts a bulk write, after undoing any abandoned one; with `wait`, after the one under way, as
   * `waitForBulkWrite` waits.
   * @throws BulkWriteRunningError when another bulk write is under way (still, at `wait.until`).
   */
  static async start(context: StoreContext, kind: BulkWriteKind, wait?: BulkWait, onAbandonedUndone?: (write: RunningBulkWrite) => void): Promise<BulkWriteJournal> {
    for (;;) {
      await waitForBulkWrite(context, wait, onAbandonedUndone);
      const owner = ownerName();
      try {
        const id = await context.run(() =>
          context.writeDb.transaction().execute(async (trx) => {
            const running = await findRunning(trx);
            if (running !== undefined) throw running;
            const now = Date.now();
            const row = await trx
              .insertInto('bulk_write')
              .values({ kind, owner, state: 'writing', started_at: now, heartbeat_at: now })
              .returning('id')
              .executeTakeFirstOrThrow();
            return Number(row.id);
          }),
        );
        return new BulkWriteJournal(context, id, owner);
      } catch (error) {
        // Another one started between the look and this start: this one waits for it in turn, if it may.
        if (!(error instanceof BulkWriteRunningError) || wait === undefined || Date.now() >= wait.until) throw error;
      }
    }
  }

  /** The longest a step held the write lock, in milliseconds, and how many steps there were. */
  get holds(): { readonly longestMs: number; readonly steps: number } {
    return { longestMs: this.#longestHoldMs, steps: this.#steps };
  }

  /**
   * Runs `work` as one step: one transaction, in which `work` writes and journals (with `recordAdded`,
   * `recordChanged`, `recordRemoved`) how to undo what it wrote.
   */
  async step<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    let began = 0;
    const result = await this.#context.writeDb.transaction().execute(async (trx) => {
      began = performance.now();
      const done = await work(trx);
      if (Date.now() - this.#lastBeat >= HEARTBEAT_EVERY_MS) await this.#beat(trx);
      return done;
    });
    this.#longestHoldMs = Math.max(this.#longestHoldMs, performance.now() - began);
    this.#steps += 1;
    return result;
  }

  /** Journals that products with these pks were added (in runs of consecutive pks: one row per run). */
  async recordAdded(trx: Transaction<Database>, pks: readonly (number | string | bigint)[]): Promise<void> {
    const runs: Array<[number, number]> = [];
    for (const pk of pks.map(Number).sort((a, b) => a - b)) {
      const last = runs.at(-1);
      if (last !== undefined && last[1] + 1 === pk) last[1] = pk;
      else runs.push([pk, pk]);
    }
    if (runs.length === 0) return;
    await trx
      .insertInto('bulk_undo')
      .values(runs.map(([from, to]) => ({ write_id: this.#id, action: 'added', pk_from: from, pk_to: to, name: null, name_folded: null, barcode: null, price_cents: null })))
      .execute();
  }

  /**
   * Journals, as they are now, the rows of `product` that a step is about to change (`changed`) or
   * remove (`removed`): those of `from` (which may join other tables to `product`, and use a `with`
   * clause's) that `where` keeps.
   */
  async recordRows(
    trx: Kysely<Database>,
    action: 'changed' | 'removed',
    { with: withClause = sql``, from, where = sql<boolean>`1 = 1` }: { with?: RawBuilder<unknown>; from: RawBuilder<unknown>; where?: RawBuilder<boolean> },
  ): Promise<void> {
    await sql`
      ${withClause}
      INSERT INTO bulk_undo (write_id, action, pk_from, pk_to, name, name_folded, barcode, price_cents)
      SELECT ${sql.lit(this.#id)}, ${sql.lit(action)}, product.pk, product.pk, product.name, product.name_folded, product.barcode, product.price_cents
      FROM ${from} WHERE ${where}`.execute(trx);
  }

  /** Marks the bulk write done (from then on it stays, whatever happens), then drops its journal. */
  async finish(): Promise<void> {
    await this.#context.run(() => this.#context.writeDb.updateTable('bulk_write').set({ state: 'finishing' }).where('id', '=', this.#id).execute());
    await dropJournal(this.#context, this.#id);
  }

  /**
   * Undoes every step, newest first, in short transactions. While the database is away it tries again
   * (each step undone stays undone) for up to `retryMs`, telling `onRetry` once.
   *
   * @throws the database's last error, once `retryMs` has passed or for any other failure.
   */
  async undo(retryMs = UNDO_RETRY_MS, onRetry?: (error: unknown) => void): Promise<UndoOutcome> {
    const until = Date.now() + retryMs;
    for (let delay = 250, told = false; ; delay = Math.min(2 * delay, 5_000)) {
      try {
        await this.#context.run(() => this.#context.writeDb.updateTable('bulk_write').set({ state: 'undoing' }).where('id', '=', this.#id).execute());
        return await undoSteps(this.#context, this.#id);
      } catch (error) {
        const away = error instanceof StoreUnavailableError || error instanceof StoreBusyError || error instanceof StoreTimeoutError;
        if (!away || Date.now() + delay > until) throw error;
        if (!told) onRetry?.(error);
        told = true;
        await sleep(delay);
      }
    }
  }

  /**
   * `work`'s outcome, the bulk write kept alive meanwhile: a check that reads a whole file before the
   * first step may take longer than ABANDONED_AFTER_MS, after which another process would undo it.
   */
  async whileAlive<T>(work: Promise<T>): Promise<T> {
    let failed: unknown;
    const beat = (): void => {
      this.#context.writeDb.transaction().execute((trx) => this.#beat(trx)).catch((error: unknown) => {
        failed ??= error;
      });
    };
    const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
    try {
      const outcome = await work;
      if (failed !== undefined) throw failed;
      return outcome;
    } finally {
      clearInterval(timer);
    }
  }

  async #beat(trx: Transaction<Database>): Promise<void> {
    const now = Date.now();
    const { numUpdatedRows } = await trx
      .updateTable('bulk_write')
      .set({ heartbeat_at: now })
      .where('id', '=', this.#id)
      .where('owner', '=', this.#owner)
      .executeTakeFirstOrThrow();
    // Another process found it abandoned (its steps waited longer than ABANDONED_AFTER_MS) and undoes it.
    if (numUpdatedRows === 0n) throw new Error('The bulk write was taken for abandoned and is being undone by another process.');
    this.#lastBeat = now;
  }
}

/**
 * Resolves once no bulk write is under way, having undone any abandoned one. With `wait`, while one is
 * under way it looks again every WAIT_LOOKS_EVERY_MS until `wait.until`, telling `wait.onWaiting` each
 * time; between two looks it holds no lock and keeps no query open.
 *
 * @throws BulkWriteRunningError naming the bulk write under way: at once without `wait`, else at `wait.until`.
 */
export async function waitForBulkWrite(context: StoreContext, wait?: BulkWait, onAbandonedUndone?: (write: RunningBulkWrite) => void): Promise<void> {
  for (;;) {
    await undoAbandonedBulkWrites(context, onAbandonedUndone);
    const running = await context.run(() => findRunning(context.db));
    if (running === undefined) return;
    const left = (wait?.until ?? 0) - Date.now();
    if (left <= 0) throw running;
    wait?.onWaiting?.(running);
    await sleep(Math.min(WAIT_LOOKS_EVERY_MS, left));
  }
}

/** The bulk write under way, as the error that names it; `undefined` when there is none. */
async function findRunning(db: Kysely<Database>): Promise<BulkWriteRunningError | undefined> {
  const running = await db.selectFrom('bulk_write').select(['kind', 'owner', 'started_at']).orderBy('id').executeTakeFirst();
  return running === undefined ? undefined : new BulkWriteRunningError(running.kind, running.owner, new Date(Number(running.started_at)));
}

/**
 * Finishes what abandoned bulk writes (not seen alive for ABANDONED_AFTER_MS) left: undoes one that
 * was writing or undoing, drops the journal of one that was done. Several processes may call this at
 * once: each write is claimed by one of them.
 *
 * @param onUndone told of each one undone (not of one that was done, whose journal is only dropped).
 * @returns how many bulk writes were taken care of.
 */
export async function undoAbandonedBulkWrites(context: StoreContext, onUndone?: (write: RunningBulkWrite) => void): Promise<number> {
  const writes = await context.run(() => context.db.selectFrom('bulk_write').select(['id', 'kind', 'state', 'owner', 'started_at', 'heartbeat_at']).orderBy('id').execute());
  let handled = 0;
  for (const write of writes.filter(isAbandoned)) {
    const id = Number(write.id);
    // Claimed by moving its heartbeat: of several processes, the one whose update finds the old value wins.
    const { numUpdatedRows } = await context.run(() =>
      context.writeDb
        .updateTable('bulk_write')
        .set({ owner: ownerName(), heartbeat_at: Date.now(), state: write.state === 'finishing' ? 'finishing' : 'undoing' })
        .where('id', '=', id)
        .where('heartbeat_at', '=', write.heartbeat_at)
        .executeTakeFirstOrThrow(),
    );
    if (numUpdatedRows === 0n) continue;
    if (write.state === 'finishing') await dropJournal(context, id);
    else {
      await undoSteps(context, id);
      onUndone?.({ kind: write.kind, owner: write.owner, startedAt: new Date(Number(write.started_at)) });
    }
    handled += 1;
  }
  return handled;
}

/** Undoes bulk write `id`'s journaled steps, newest first, then forgets the write. */
async function undoSteps(context: StoreContext, id: number): Promise<UndoOutcome> {
  const notRestored: string[] = [];
  for (;;) {
    const done = await context.run(() =>
      context.writeDb.transaction().execute(async (trx) => {
        const rows = await trx.selectFrom('bulk_undo').selectAll().where('write_id', '=', id).orderBy('id', 'desc').limit(ROWS_PER_UNDO_STEP).execute();
        if (rows.length === 0) return true;
        // Products put back per transaction stay near ROWS_PER_UNDO_STEP: an added run counts its pks.
        let budget = ROWS_PER_UNDO_STEP;
        const taken = rows.filter((row) => {
          const size = Number(row.pk_to) - Number(row.pk_from) + 1;
          if (budget <= 0) return false;
          budget -= size;
          return true;
        });
        const ids = taken.map((row) => row.id);
        for (const row of taken.filter((row) => row.action === 'added')) {
          await trx.deleteFrom('product').where('pk', '>=', Number(row.pk_from)).where('pk', '<=', Number(row.pk_to)).execute();
        }
        await sql`
          UPDATE product SET name = u.name, name_folded = u.name_folded, price_cents = u.price_cents
          FROM bulk_undo u WHERE u.id IN (${sql.join(ids)}) AND u.action = 'changed' AND product.pk = u.pk_from`.execute(trx);
        const removed = taken.filter((row) => row.action === 'removed');
        if (removed.length > 0) {
          // A barcode free again since its product was removed may have gone to a new product meanwhile.
          const { rows: restored } = await sql<{ barcode: string }>`
            INSERT INTO product (pk, name, name_folded, barcode, price_cents) ${context.dialect.givenPk}
            SELECT u.pk_from, u.name, u.name_folded, u.barcode, u.price_cents FROM bulk_undo u
            WHERE u.id IN (${sql.join(removed.map((row) => row.id))})
              AND NOT EXISTS (SELECT 1 FROM product p WHERE p.barcode = u.barcode OR p.pk = u.pk_from)
            RETURNING barcode`.execute(trx);
          const back = new Set(restored.map((row) => row.barcode));
          notRestored.push(...removed.map((row) => row.barcode ?? '').filter((barcode) => !back.has(barcode)));
        }
        await trx.deleteFrom('bulk_undo').where('id', 'in', ids).execute();
        await trx.updateTable('bulk_write').set({ heartbeat_at: Date.now() }).where('id', '=', id).execute();
        return false;
      }),
    );
    if (done) break;
    context.changedProducts();
  }
  await context.run(() => context.writeDb.deleteFrom('bulk_write').where('id', '=', id).execute());
  return { notRestored };
}

/** Drops bulk write `id`'s journal in short transactions, then the write itself. */
async function dropJournal(context: StoreContext, id: number): Promise<void> {
  for (;;) {
    const { numDeletedRows } = await context.run(() =>
      context.writeDb
        .deleteFrom('bulk_undo')
        .where('id', 'in', (eb) => eb.selectFrom('bulk_undo').select('id').where('write_id', '=', id).limit(ROWS_PER_UNDO_STEP * 10))
        .executeTakeFirstOrThrow(),
    );
    if (numDeletedRows === 0n) break;
  }
  await context.run(() => context.writeDb.deleteFrom('bulk_write').where('id', '=', id).execute());
}

/**
 * This process, as a bulk write's owner: its machine and process id (to tell at once that it died),
 * and a random part, unique among the processes that may share the database. The store reads the
 * process's identity itself: crash recovery is about processes.
 */
function ownerName(): string {
  return `${hostname()} pid ${process.pid} ${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Whether a bulk write's owner is gone: not seen alive for ABANDONED_AFTER_MS, or, on this machine,
 * its process no longer runs (a process id used again since only makes it look alive: the heartbeat
 * then decides).
 */
function isAbandoned(write: { owner: string; heartbeat_at: number | string | bigint }): boolean {
  if (Date.now() - Number(write.heartbeat_at) > ABANDONED_AFTER_MS) return true;
  const [host, , pid] = write.owner.split(' ');
  if (host !== hostname() || pid === undefined || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
