import path from 'node:path';
import { defineConfig } from 'vite';
import { viteSingleFile } from 'vite-plugin-singlefile';

// The UI ships inside the server as one HTML document (the SPA fallback).
export default defineConfig({
  root: import.meta.dirname,
  plugins: [viteSingleFile()],
  build: {
    outDir: path.join(import.meta.dirname, '..', 'dist', 'web'),
    emptyOutDir: true,
  },
});
