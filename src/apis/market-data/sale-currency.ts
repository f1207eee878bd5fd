// An event's currency on marketplace A (spec 2.2 `event.currency`): the currency in which the
// most tickets were sold, USD before any sale. Shared by the event response and the sales list
// so both name the same currency. A marketplace B event without statistics is in USD as well.

export const CURRENCY_WITHOUT_SALES = 'USD';

/**
 * A lateral subquery over ma_sales for the event `e`: one row `{currency}` or none without
 * sales. Ties go to the alphabetically first code so the answer is stable.
 */
export const DOMINANT_SALE_CURRENCY = `LATERAL (
  SELECT currency FROM ma_sales WHERE event_id = e.id
  GROUP BY currency ORDER BY sum(quantity) DESC, currency ASC LIMIT 1)`;
