import { defineConfig } from 'vitest/config';

// testcontainers reaches published ports through the bridge gateway when it runs inside a container
// (/.dockerenv); the engine here publishes them on this machine's loopback, the one host name every
// server under test accepts. Set TESTCONTAINERS_HOST_OVERRIDE when the engine runs elsewhere.
const containerEnv = {
  TESTCONTAINERS_HOST_OVERRIDE: process.env['TESTCONTAINERS_HOST_OVERRIDE'] ?? 'localhost',
  TESTCONTAINERS_RYUK_DISABLED: process.env['TESTCONTAINERS_RYUK_DISABLED'] ?? 'true',
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['tests/unit/**/*.test.ts'],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'blackbox',
          include: ['tests/blackbox/**/*.test.ts'],
          globalSetup: ['tests/blackbox/global-setup.ts'],
          env: containerEnv,
          // Containers share two cores: one file at a time keeps timings sane.
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
      {
        test: {
          name: 'browser',
          include: ['tests/browser/**/*.test.ts'],
          env: containerEnv,
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
