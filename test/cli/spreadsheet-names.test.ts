import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nameForSpreadsheet, nameFromSpreadsheet } from '../../src/cli/spreadsheet-names.js';

describe('names in CSV for spreadsheets', () => {
  it('puts a quote before a name a spreadsheet would run as a formula, and only then', () => {
    for (const name of ['=1+1', '+1', '-1', '@A1', '\t=1', '\r=1', '\uFF1D1', '\uFF0B1', '\uFF0D1', '\uFF201', "'=1", "'''-1"]) {
      assert.equal(nameForSpreadsheet(name), `'${name}`, JSON.stringify(name));
    }
    for (const name of ['Tea', "'Tea", "''", "'", 'Tea = 1', ' =1', '1-2', '']) assert.equal(nameForSpreadsheet(name), name, JSON.stringify(name));
  });

  it('gives every name back as it was', () => {
    for (const name of ['=1+1', '-1', "'=1", "''=1", "'Tea", "'", "''", 'Tea', '\t@', '\uFF20x', "'\uFF0D"]) {
      assert.equal(nameFromSpreadsheet(nameForSpreadsheet(name)), name, JSON.stringify(name));
    }
  });
});
