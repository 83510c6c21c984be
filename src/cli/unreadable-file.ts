/** The file as a whole cannot be read (wrong header, broken quoting, a line far too long, not a JSON array, not UTF-8). */
export class UnreadableFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreadableFileError';
  }
}
