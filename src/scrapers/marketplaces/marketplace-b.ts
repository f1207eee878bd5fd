// Marketplace B scraper: the HTML event page `{base}/event/{id}`, read with Cheerio: the event's
// name, start, category and venue, the region block (market and currency), the sections table
// (counts from the rows' data attributes) and the offers (stock from a data attribute, prices
// from the text written for people). A 404 is an unknown event; a page without the sections
// table or the region block is `malformed`.
import type { CheerioAPI } from 'cheerio';
import { publicEventUrl } from '../../market-data/tracking-ref.ts';
import type { ScrapeFetcher } from '../types.ts';
import { marketplaceReader, optionalCountryCode, type MarketplaceBEventPage, type MbOfferType } from './types.ts';
import { cloudflareChallenge } from '../block-pages.ts';

const read = marketplaceReader('marketplace_b');
const OFFER_TYPE: Record<string, MbOfferType> = { standard: 'standard', resale: 'resale', platinum: 'platinum' };

export function parseMarketplaceB(id: string, $: CheerioAPI): MarketplaceBEventPage {
  const main = $('main.event-page');
  if (main.length === 0) throw read.malformed('the page has no event');
  if (main.attr('data-event-id') !== id) throw read.malformed(`the page is about event ${String(main.attr('data-event-id'))}, not ${id}`);
  const region = $('section.region-info');
  if (region.length === 0) throw read.malformed('the page has no region block');
  const regionCode = read.text(region.attr('data-region'), 'data-region of the region block').toLowerCase();
  if (!/^[a-z]{2,8}$/.test(regionCode)) throw read.malformed(`the region '${regionCode.slice(0, 20)}' is not a region code`);
  const currency = read.optionalCurrency(region.attr('data-currency'));
  if (!currency) throw read.malformed('the region block names no ISO 4217 currency');
  const table = $('table.section-stats');
  if (table.length === 0) throw read.malformed('the page has no sections table');

  const sections = table
    .find('tr.section-row')
    .toArray()
    .map((row, i) => {
      const r = $(row);
      const name = read.text(r.find('.section-name').text(), `name of section row ${i + 1}`);
      return {
        name,
        capacity: read.quantity(r.attr('data-capacity'), `capacity of section "${name}"`),
        available: read.quantity(r.attr('data-available'), `available of section "${name}"`),
        sold: read.quantity(r.attr('data-sold'), `sold of section "${name}"`),
      };
    });
  const offers = $('ul.offers li.offer')
    .toArray()
    .map((item, i) => {
      const o = $(item);
      const name = read.text(o.find('.offer-name').text(), `name of offer ${i + 1}`);
      return {
        name,
        stock: read.quantity(o.attr('data-stock'), `stock of offer "${name}"`),
        price: read.priceText(o.find('.price-incl-fees').text(), 'point', `price with fees of offer "${name}"`),
        face_price: read.priceText(o.find('.price-excl-fees').text(), 'point', `price without fees of offer "${name}"`),
        type: read.oneOf(o.attr('data-offer-type'), OFFER_TYPE, `type of offer "${name}"`),
        currency: read.optionalCurrency(o.attr('data-currency')) ?? currency,
      };
    });
  const venue = $('div.venue');
  const venueName = read.optionalText(venue.find('.venue-name').text());
  const average = $('p.average-sale .amount');
  return {
    id,
    url: publicEventUrl('marketplace_b', id),
    name: read.text(main.find('h1.event-name').text(), 'the event name'),
    starts_at: read.optionalTime(main.find('time.event-date').attr('datetime')),
    category: read.optionalText(main.find('.event-category').text()),
    venue: venueName
      ? {
          name: venueName,
          city: read.optionalText(venue.find('.venue-city').text()),
          country: read.optionalText(venue.find('.venue-country').text()),
          country_code: optionalCountryCode(venue.attr('data-country-code')),
        }
      : null,
    region: regionCode,
    currency,
    sections,
    offers,
    average_sale_price: average.length ? read.priceText(average.text(), 'point', 'the average resale price') : null,
  };
}

/** Behind Cloudflare's managed challenge (block-pages.ts). */
export const blockPage = cloudflareChallenge;

/** `http`: bound to this scrape (its session, signal and challenge page; ../scrape-via.ts). */
export async function scrapeMarketplaceB(http: ScrapeFetcher, baseUrl: string, id: string): Promise<MarketplaceBEventPage> {
  const page = await http.html(`${baseUrl}/event/${encodeURIComponent(id)}`);
  read.expectFound(page, 'the event page');
  return parseMarketplaceB(id, page.$);
}
