/**
 * The folder holding `src/`, `dist/` and `docs/`, whether the calling module runs from `src/http/`
 * (tests, tsx), from `dist/http/` (tsc's output) or bundled into `dist/server.js` (npm start).
 */
export function repositoryRoot(moduleUrl: string): URL {
  const cut = Math.max(moduleUrl.lastIndexOf('/src/'), moduleUrl.lastIndexOf('/dist/'));
  return new URL('./', moduleUrl.slice(0, cut + 1));
}
