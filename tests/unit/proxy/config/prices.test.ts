import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProxyConfig } from '../../../../src/proxy/config/index.ts';
import { configFailure } from '../../../support/config-failure.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-prices-config-'));
let files = 0;

function load(prices: unknown) {
  const file = path.join(dir, `c-${files++}.json`);
  writeFileSync(file, JSON.stringify({ proxy: { prices } }));
  return loadProxyConfig({ argv: ['--config', file], env: {}, cwd: dir });
}

describe('proxy.prices', () => {
  it('reads each price in order; cache prices default to the input price', () => {
    const prices = [
      { model: 'my-llama-*', input_per_mtok: 0.2, output_per_mtok: 0.6 },
      { model: 'gpt-4o', input_per_mtok: 2, output_per_mtok: 8, cache_read_per_mtok: 1, cache_write_per_mtok: 0 },
    ];
    expect(load(prices).prices).toEqual([
      { model: 'my-llama-*', inputPerMtok: 0.2, outputPerMtok: 0.6, cacheReadPerMtok: 0.2, cacheWritePerMtok: 0.2 },
      { model: 'gpt-4o', inputPerMtok: 2, outputPerMtok: 8, cacheReadPerMtok: 1, cacheWritePerMtok: 0 },
    ]);
  });

  it.each([
    [[{ input_per_mtok: 1, output_per_mtok: 1 }], 'proxy.prices[0].model: must be a non-empty string'],
    [[{ model: 'x', output_per_mtok: 1 }], 'proxy.prices[0].input_per_mtok: must be a number of USD per million'],
    [[{ model: 'x', input_per_mtok: '0.2', output_per_mtok: 1 }], 'proxy.prices[0].input_per_mtok: must be a number'],
    [[{ model: 'x', input_per_mtok: 1, output_per_mtok: -1 }], 'proxy.prices[0].output_per_mtok: must be a number'],
    [
      [
        { model: 'x', input_per_mtok: 1, output_per_mtok: 1 },
        { model: 'y', input_per_mtok: 1, output_per_mtok: 1, cache_read_per_mtok: 'cheap' },
      ],
      'proxy.prices[1].cache_read_per_mtok: must be a number',
    ],
    [[{ model: 'x', input_per_mtok: 1, output_per_mtok: 1, per: 'token' }], 'proxy.prices[0].per: is not a setting'],
    [['x=1'], 'proxy.prices[0]: must be an object'],
  ])('%j refuses to start, naming the entry', (prices, message) => {
    expect(configFailure(() => load(prices))).toContain(`invalid configuration: ${message}`);
  });
});
