// Live Availability API. This issue builds the liveness probe; the platform registry and
// on-demand scrapes arrive with the Live Availability issue and are not routed until then.
import { z } from 'zod';
import type { ApiModule } from '../../gateway/app.ts';
import { liveAvailabilityFailures } from './errors.ts';

export const liveAvailabilityApi: ApiModule = {
  api: 'live_availability',
  failures: liveAvailabilityFailures,
  routes: [
    {
      operationId: 'pingLiveAvailability',
      summary: 'Liveness probe',
      responses: { 200: { description: '`{status}`', schema: z.object({ status: z.string() }) } },
      handler: async (ctx) => {
        ctx.body = { status: 'ok' };
      },
    },
  ],
};
