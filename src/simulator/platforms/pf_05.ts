// pf_05 in the simulator: an Italian JSON API, `/api/eventi/{key}/settori?regione=it`, with
// Italian field names and prices as strings with a decimal comma ("120,50"). Malformed: the
// sectors lose their `prezzo`.
import { queryRegion } from '../inventory.ts';
import { amountText } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent, SimSection } from '../state.ts';

const TIPOLOGIA: Record<SimSection['ticket_type'], string> = { standard: 'intero', resale: 'rivendita', platinum: 'platino', general_admission: 'posto_unico' };

function settori(event: SimEvent, malformed: boolean) {
  return {
    evento: { id: event.key, titolo: event.name, luogo: event.venue, citta: event.city, data_inizio: event.starts_at, valuta: event.currency },
    settori: event.sections.map((section, i) => ({
      codice: `${event.key}-S${i + 1}`,
      settore: section.name,
      ...(malformed ? {} : { prezzo: amountText(section.price, { decimal: ',', group: '.' }) }),
      disponibili: section.stock,
      tipologia: TIPOLOGIA[section.ticket_type],
      visibilita_ridotta: section.restricted_view,
      accessibile: section.accessible,
      prevendita: section.presale,
    })),
  };
}

export const pf05: SimPlatform = {
  platform: 'pf_05',
  mount(router, serve) {
    router.get('/api/eventi/:key/settori', (ctx) =>
      serve(ctx, { platform: 'pf_05', key: ctx.params.key!, region: queryRegion(ctx, 'regione'), type: 'json' }, (event, { malformed }) => ({
        type: 'json',
        body: settori(event, malformed),
      })),
    );
  },
};
