/**
 * A file of the build (`dist/`), whether the calling module runs from `src/http/` (tests, tsx), from
 * `dist/http/` (tsc's output) or bundled into `dist/server.js` (npm start). Everything the service
 * reads from disk comes from the build alone, so that a deployment shipping `dist/` works.
 *
 * @example const page = builtFile(import.meta.url, 'web/index.html');
 */
export function builtFile(moduleUrl: string, path: string): URL {
  const cut = Math.max(moduleUrl.lastIndexOf('/src/'), moduleUrl.lastIndexOf('/dist/'));
  return new URL(`dist/${path}`, moduleUrl.slice(0, cut + 1));
}
