// `npm run migrate`: applies pending migrations to the configured database and exits.
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/runtime/database.ts';

const config = loadConfig();
const database = await openDatabase(config, (m) => console.error(m), { applicationName: 'migrate' });
console.error('database is up to date');
await database.close();
