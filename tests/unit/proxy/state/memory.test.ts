import { memoryState } from '../../../../src/proxy/state/shared.ts';
import { sharedStateContract } from './shared-contract.ts';

sharedStateContract('memory', (now) => Promise.resolve(memoryState(now)));
