import path from 'node:path';
import { defineConfig } from 'vite';
import { viteSingleFile } from 'vite-plugin-singlefile';

// The proxy's console ships inside the proxy as one HTML document, like the review UI.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [viteSingleFile()],
  build: {
    outDir: path.join(import.meta.dirname, '..', '..', 'dist', 'console'),
    emptyOutDir: true,
  },
});
