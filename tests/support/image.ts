/** The image every black-box suite runs, built once per run by tests/blackbox/global-setup.ts. */
export const IMAGE = process.env['GATEHOUSE_TEST_IMAGE'] ?? 'gatehouse:test';
