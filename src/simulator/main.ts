// `npm run simulator`: the platform simulator alone, on SIM_PORT (default 8090).
import { loadConfigOrExit } from '../config.ts';
import { startSimulator } from './server.ts';

const config = loadConfigOrExit();
const sim = await startSimulator({ port: config.SIM_PORT, host: config.HOST, driftMs: config.SIM_DRIFT_MS, pf01SessionTtlMs: config.SIM_PF01_SESSION_TTL_MS });
console.log(`platform simulator on ${sim.url} and ${sim.httpsUrl} (control API under ${sim.url}/_sim/)`);
console.log(`its HTTPS certificate is signed by the CA in ${sim.caFile}`);
const stop = () => void sim.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
