import type { SqliteDatabase } from 'kysely';
import type { SqliteConnection, SqliteStatement } from './driver.js';

/**
 * Gives Kysely a database whose `prepare` reuses the prepared statement of an SQL text it has seen,
 * instead of compiling it again for every query. A statement still running (an open iterator) is
 * never handed out twice; a fresh one is prepared for that call.
 *
 * @param maxStatements how many distinct SQL texts are kept (oldest dropped first).
 */
export function withStatementCache(database: SqliteConnection, maxStatements = 200): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => database.close(),
    // Both drivers' statements take Kysely's array of parameters as they are.
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached !== undefined && !cached.busy) return cached;
      const statement = database.prepare(sql);
      if (cached === undefined) {
        if (statements.size >= maxStatements) statements.delete(statements.keys().next().value!);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}
