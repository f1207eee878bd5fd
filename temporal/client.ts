// The one way the service reaches Temporal as a client (starting, signalling and querying
// workflows): a connection with a bounded connect time, checked against the namespace up front so
// a wrong TEMPORAL_ADDRESS or TEMPORAL_NAMESPACE fails at start-up with a message that names it.
import { Client, Connection } from '@temporalio/client';
import { temporalDataConverter } from './payload-codec.ts';

export interface TemporalClient {
  connection: Connection;
  client: Client;
  close(): Promise<void>;
}

export async function connectTemporal(opts: { address: string; namespace: string; connectTimeoutMs?: number }): Promise<TemporalClient> {
  const timeoutMs = opts.connectTimeoutMs ?? 10_000;
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: opts.address, connectTimeout: timeoutMs });
  } catch (err) {
    throw new Error(`cannot reach Temporal at ${opts.address} (TEMPORAL_ADDRESS) within ${timeoutMs} ms: ${(err as Error).message}`);
  }
  try {
    await connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.describeNamespace({ namespace: opts.namespace }));
  } catch (err) {
    await connection.close();
    throw new Error(`Temporal at ${opts.address} has no usable namespace "${opts.namespace}" (TEMPORAL_NAMESPACE): ${(err as Error).message}`);
  }
  const client = new Client({ connection, namespace: opts.namespace, dataConverter: temporalDataConverter });
  return { connection, client, close: () => connection.close() };
}
