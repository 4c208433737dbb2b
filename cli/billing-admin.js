#!/usr/bin/env node
// The package's `bin`: registers tsx so the TypeScript CLI runs on Node 20 without a build.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
