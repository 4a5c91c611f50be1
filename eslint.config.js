import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'web/dist/', 'test-results/'] },
  js.configs.recommended,
  tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        AbortController: 'readonly',
        fetch: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        structuredClone: 'readonly',
      },
      // Each file is checked through its nearest tsconfig.json (web/ has its own); this config file has none.
      parserOptions: { projectService: { allowDefaultProject: ['*.js'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Prettier wraps code at 120; this catches comments. Messages and URLs stay whole so they can be grepped.
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreUrls: true, ignoreRegExpLiterals: true },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Numbers print the same everywhere; objects, null and undefined are what this rule exists to catch.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // `() => void f()` is the shortest way to say "run f, ignore its value" in a callback.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      'no-console': 'error',
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // Tests, benches and the web UI may print; the services log through pino only.
    files: ['tests/**', 'bench/**', 'web/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Vitest types its asymmetric matchers (expect.any, stringContaining, …) as any, to sit inside expected objects.
    files: ['tests/**'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
);
