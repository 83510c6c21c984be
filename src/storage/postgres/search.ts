import { sql, type RawBuilder } from 'kysely';
import type { DialectSearch } from '../dialect.js';

/**
 * What the trigram index reads in place of every character of a folded name that is not a letter or a
 * digit (migration 0013; 0010 replaced the spaces alone). pg_trgm takes its trigrams word by word, and
 * a word ends at any such character: over the folded name itself a term across words (`a 0`, `e gour`)
 * or across a hyphen or a comma (`kx-4821`, `0,33 l`) narrows little, its trigrams being those of short
 * pieces that most names have (`kx`, `4821`), whose long posting lists the index then reads. Over the
 * name with each such character replaced by a letter, the trigrams run across them as SQLite's FTS5
 * index's do. A name that holds the letter itself only makes the index hand over a few more rows, which
 * the check of the folded name itself (`strpos`) then drops: answers stay exact.
 */
const WORD_JOINER = 'q';

/** The characters replaced: what pg_trgm splits words at (its words are letters and digits). */
const NOT_A_WORD_CHARACTER = '[^[:alnum:]]';

/** The expression migration 0010 indexed: the spaces alone replaced. */
export const SPACES_JOINED = `replace(name_folded, ' ', '${WORD_JOINER}')`;

/** The expression migration 0013 indexed, and migration 0016 keeps in a column (JOINED_NAME). */
export const INDEXED_NAME = `regexp_replace(name_folded, '${NOT_A_WORD_CHARACTER}', '${WORD_JOINER}', 'g')`;

/** The column holding INDEXED_NAME, which the index has indexed since migration 0016. */
export const JOINED_NAME = 'name_joined';

/** A LIKE pattern matching any text that contains `text`, in which `%`, `_` and `\` are literal. */
const containing = (text: string): string => `%${text.replace(/[\\%_]/g, '\\$&')}%`;

/** PostgreSQL's part of the product search: pg_trgm's index over the names' words joined (migrations 0013, 0016). */
export const postgresSearch: DialectSearch = {
  foldedRow: (pk, name, folded) => sql`(cast(${String(pk)} as bigint), cast(${name} as text), cast(${folded} as text))`,
  // A text column holds text only.
  storedName: sql<string>`product.name`,
  pkParameter: String,
  unfoldedHint: '',
  contains: (text) => sql<boolean>`strpos(product.name_folded, ${text}) > 0`,
  // PostgreSQL would otherwise walk the pk index, reading every row until enough match: a full
  // scan for a rare name or a barcode. Sorting the few matches the index finds is cheaper.
  pkOrder: sql<number>`product.pk + 0`,
  // The trigram index's count of a common text reads a posting list of every name that holds it, and
  // then the rows up to the bound, scattered over the table (12-24 ms for a text in 4-6 % of a
  // million names); a walk in pk order reads 1,001 matches of it in 3-8 ms. For a text in fewer than
  // 2 % of the names the walk reads 50,000 rows or more, and the index wins (docs/PERFORMANCE.md).
  denseTexts: {
    share: 0.02,
    // Whole pages of the table at random (SYSTEM): a few dozen pages for a million products.
    sample: (size, products) => sql`SELECT name_folded FROM product TABLESAMPLE SYSTEM (${sql.lit(Math.min(100, (100 * size) / Math.max(1, products)))})`,
    // The planner estimates a text's matches from a histogram of the indexed expression: 14,747 of a
    // million for `eru`, which 670 names hold. Counting to 1,001, it then chose to read the table in
    // order until 1,001 matched, expecting that to end within 7 % of it: it read all of it, 4.2 s,
    // where the trigram index counts the same in 10-54 ms (docs/PERFORMANCE.md). The sample has said
    // the text is rare; the statement is kept off the full read (a v1 list's batch of it too: walking
    // the pk index, 2.9 s).
    readThroughIndex: (db, statement) =>
      db.transaction().execute(async (trx) => {
        await sql`SET LOCAL enable_seqscan = off`.execute(trx);
        return (await statement.execute(trx)).rows;
      }),
  },
  textSource(text, short, plain) {
    // A text too short for a trigram reads every folded name whatever the index; walking them in pk
    // order finds a page of a common one (most names hold an `e`) without reading them all.
    if (short) {
      const like = sql<boolean>`product.name_folded LIKE ${containing(text)}`;
      return { ...plain(like, true), walk: { where: like, order: sql<number>`product.pk` } };
    }
    const exact: RawBuilder<boolean> = postgresSearch.contains(text);
    // The pattern is the text with the same characters replaced, by the same function, so that it agrees
    // with the index whatever the database's locale counts as a letter; no `%`, `_` or `\` is left in it.
    const joined = sql<string>`regexp_replace(cast(${text} as text), ${sql.lit(NOT_A_WORD_CHARACTER)}, ${sql.lit(WORD_JOINER)}, 'g')`;
    const narrowed = sql<boolean>`${sql.ref(`product.${JOINED_NAME}`)} LIKE ('%' || ${joined} || '%') AND ${exact}`;
    return { ...plain(narrowed, false), walk: { where: exact, order: sql<number>`product.pk` } };
  },
};
