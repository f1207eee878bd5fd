// Creates one fresh, migrated database for the run and drops it afterwards. Tests isolate by
// creating their own accounts, never by sharing fixtures.
import type { TestProject } from 'vitest/node';
import { createScratchDatabase } from '../../db/scratch.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const scratch = await createScratchDatabase('tm_test');
  project.provide('databaseUrl', scratch.url);
  return () => scratch.drop();
}
