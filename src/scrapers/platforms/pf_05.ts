// pf_05 adapter (OfferSections), Italy only. A JSON API with Italian field names: one entry per
// sector (`settore`) with its price as text with a decimal comma (`prezzo` "120,50"), tickets
// left (`disponibili`), kind (`tipologia`) and flags.
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData, TicketType } from '../types.ts';
import { datadomeBlock } from '../block-pages.ts';

const read = new PageReader('pf_05');
const TIPOLOGIA: Record<string, TicketType> = { intero: 'standard', rivendita: 'resale', platino: 'platinum', posto_unico: 'general_admission' };

export function parsePf05(ref: EventRef, data: unknown, url: string): ScrapeData {
  if (data === undefined) throw read.malformed('the settori API did not answer JSON');
  const body = read.object(data, 'the settori API answer');
  const evento = read.object(body.evento, 'evento');
  const currency = read.optionalCurrency(evento.valuta);
  const sections = new OfferSectionsBuilder(currency);
  for (const [i, raw] of read.array(body.settori, 'settori').entries()) {
    const settore = read.object(raw, `settore ${i + 1}`);
    const where = `settore ${i + 1}`;
    sections.offer(read.text(settore.settore, `name of ${where}`), {
      id: read.text(settore.codice, `codice of ${where}`),
      price: read.priceText(settore.prezzo, 'comma', `prezzo of ${where}`),
      quantity: read.quantity(settore.disponibili, `disponibili of ${where}`),
      ticket_type: read.oneOf(settore.tipologia, TIPOLOGIA, `tipologia of ${where}`),
      restricted_view: read.boolean(settore.visibilita_ridotta, `visibilita_ridotta of ${where}`),
      accessible: read.boolean(settore.accessibile, `accessibile of ${where}`),
      presale: read.boolean(settore.prevendita, `prevendita of ${where}`),
    });
  }
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(evento.titolo),
      venue: read.optionalText(evento.luogo),
      city: read.optionalText(evento.citta),
      starts_at: read.optionalTime(evento.data_inizio),
      currency,
    }),
    degraded: null,
  };
}

/** pf_05 is behind DataDome's CAPTCHA (block-pages.ts). */
export const blockPage = datadomeBlock;

export function createPf05({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_05',
    async scrape(ref, { http }) {
      const key = encodeURIComponent(ref.key);
      const answer = await http.json(`${baseUrl}/api/eventi/${key}/settori?regione=${encodeURIComponent(ref.region)}`);
      read.expectFound(answer, 'the settori API');
      return parsePf05(ref, answer.data, publicUrl('pf_05', `/evento/${key}`));
    },
  };
}
