/** How much of a refused value a message quotes: enough to recognise it, never a whole hostile input. */
const QUOTED_CHARACTERS = 40;

/** `text` as a message quotes it: cut after 40 characters, with an ellipsis when cut. */
export function truncate(text: string): string {
  return text.length > QUOTED_CHARACTERS ? `${text.slice(0, QUOTED_CHARACTERS)}…` : text;
}
