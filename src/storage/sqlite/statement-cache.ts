import type { SqliteDatabase, SqliteStatement as KyselyStatement } from 'kysely';
import type { SqliteConnection, SqliteStatement } from './driver.js';

/**
 * Gives Kysely a database whose `prepare` reuses the prepared statement of an SQL text it has seen,
 * instead of compiling it again for every query. A statement still running (an open iterator) is
 * never handed out twice; a fresh one is prepared for that call.
 *
 * @param maxStatements how many distinct SQL texts are kept (oldest dropped first).
 */
export function withStatementCache(database: SqliteConnection, maxStatements = 200): SqliteDatabase {
  const statements = new Map<string, CachedStatement>();
  return {
    close: () => database.close(),
    prepare(sql: string): KyselyStatement {
      const cached = statements.get(sql);
      if (cached !== undefined && !cached.statement.busy) return cached.forKysely;
      const fresh = cache(database.prepare(sql));
      if (cached === undefined) {
        if (statements.size >= maxStatements) statements.delete(statements.keys().next().value!);
        statements.set(sql, fresh);
      }
      return fresh.forKysely;
    },
  };
}

interface CachedStatement {
  readonly statement: SqliteStatement;
  readonly forKysely: KyselyStatement;
}

/** Kysely passes parameters as one array; the drivers take them as separate arguments. */
function cache(statement: SqliteStatement): CachedStatement {
  return {
    statement,
    forKysely: {
      reader: statement.reader,
      all: (parameters) => statement.all(...parameters),
      run: (parameters) => statement.run(...parameters),
      iterate: (parameters) => statement.iterate(...parameters),
    },
  };
}
