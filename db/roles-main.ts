// `npm run db:roles`: sets up the database roles of a PostgreSQL server of your own (issue 25;
// docker-compose's one-shot db-roles job), as its superuser, from the connection strings the
// processes will use: DATABASE_URL's user becomes the owner of its database, SCRAPER_DATABASE_URL's
// user may only connect to it (its table rights come with the migrations: SCRAPER_DB_ROLE), and
// TEMPORAL_DATABASE_URL's user owns its database and `<that database>_visibility`. Safe to run
// again: roles get their password and attributes set again, and objects another role owns in those
// databases (a stack from before issue 25) are handed to their owner. Prints what it did as JSON.
import { loginFromUrl, setUpRoles, type RolePlan } from './roles.ts';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is required (docs/operations.md#database-roles)`);
    process.exit(2);
  }
  return value;
}

try {
  const superuserUrl = required('ADMIN_DATABASE_URL');
  const app = loginFromUrl(required('DATABASE_URL'), 'DATABASE_URL');
  const plan: RolePlan = { app };
  if (process.env.SCRAPER_DATABASE_URL) {
    const scraper = loginFromUrl(process.env.SCRAPER_DATABASE_URL, 'SCRAPER_DATABASE_URL');
    if (scraper.database !== app.database) throw new Error('SCRAPER_DATABASE_URL must name the database DATABASE_URL names');
    plan.scraper = scraper.role;
  }
  if (process.env.TEMPORAL_DATABASE_URL) {
    const temporal = loginFromUrl(process.env.TEMPORAL_DATABASE_URL, 'TEMPORAL_DATABASE_URL');
    plan.temporal = { role: temporal.role, databases: [temporal.database, `${temporal.database}_visibility`] };
  }
  const names = [plan.app.role.name, plan.scraper?.name, plan.temporal?.role.name].filter(Boolean);
  if (new Set(names).size !== names.length) throw new Error('the service, the scrape worker and Temporal each need a role of their own');
  const done = await setUpRoles(superuserUrl, plan);
  console.log(
    JSON.stringify({
      owner: { role: plan.app.role.name, database: plan.app.database },
      scraper: plan.scraper ? { role: plan.scraper.name } : null,
      temporal: plan.temporal ? { role: plan.temporal.role.name, databases: plan.temporal.databases } : null,
      handed_over: done.handedOver,
    }),
  );
} catch (err) {
  console.error('db:roles failed:', err instanceof Error ? err.message : err);
  process.exit(1);
}
