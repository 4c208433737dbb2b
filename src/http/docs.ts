import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, normalize } from 'node:path';
import type { Middleware } from 'koa';
import { API_ROOT, OPENAPI_PATH } from './api.js';

const require = createRequire(import.meta.url);
const SWAGGER_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS = new Map([
  ['swagger-ui.css', 'text/css'],
  ['swagger-ui-bundle.js', 'application/javascript'],
  ['favicon-32x32.png', 'image/png'],
]);

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Billing Service API reference</title>
  <link rel="stylesheet" href="${API_ROOT}/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="api-reference"></div>
  <script src="${API_ROOT}/docs/assets/swagger-ui-bundle.js"></script>
  <script src="${API_ROOT}/docs/init.js"></script>
</body>
</html>`;

// Served as a file rather than inline so the page works under a strict Content-Security-Policy.
const INIT = `window.ui = SwaggerUIBundle({ url: '${API_ROOT}/openapi.yaml', dom_id: '#api-reference', deepLinking: true });`;

/** The contract itself and an API reference page rendered from it (assets from npm, no CDN). */
export function docsMiddleware(): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const path = ctx.path;
    if (path === `${API_ROOT}/openapi.yaml`) {
      ctx.type = 'application/yaml';
      ctx.body = await readFile(OPENAPI_PATH, 'utf8');
      return;
    }
    if (path === `${API_ROOT}/docs` || path === `${API_ROOT}/docs/`) {
      ctx.type = 'text/html';
      ctx.body = PAGE;
      return;
    }
    if (path === `${API_ROOT}/docs/init.js`) {
      ctx.type = 'application/javascript';
      ctx.body = INIT;
      return;
    }
    const asset = path.startsWith(`${API_ROOT}/docs/assets/`) ? path.slice(`${API_ROOT}/docs/assets/`.length) : null;
    if (asset && ASSETS.has(asset)) {
      ctx.type = ASSETS.get(asset)!;
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.body = await readFile(normalize(join(SWAGGER_DIR, asset)));
      return;
    }
    return next();
  };
}
