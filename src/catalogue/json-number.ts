/**
 * A JSON number exactly as it was written in a request body ("12.50", "1e3", "-0").
 *
 * The body parser keeps numbers in this form so that money is never routed through a binary
 * double, and so that an exponent form can be told apart from plain digits.
 */
export class JsonNumber {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
}
