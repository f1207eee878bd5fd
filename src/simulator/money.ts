// Prices as the simulated platforms write them for people: "€120.50", "120,50", "1 250 Kč",
// "A$1,250.00". Amounts are handled in whole cents so no float artefact reaches a page.

export interface MoneyStyle {
  /** Decimal mark and thousands separator. */
  decimal: '.' | ',';
  group: string;
  /** Leave out ",00" / ".00" on whole amounts (as Czech sites do). */
  dropZeroCents?: boolean;
}

export function cents(price: number): number {
  return Math.round(price * 100);
}

export function amountText(price: number, style: MoneyStyle): string {
  const total = cents(price);
  const whole = String(Math.floor(total / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, style.group);
  const fraction = String(total % 100).padStart(2, '0');
  return style.dropZeroCents && fraction === '00' ? whole : `${whole}${style.decimal}${fraction}`;
}

const SYMBOLS: Record<string, string> = { EUR: '€', GBP: '£', USD: '$', AUD: 'A$', NZD: 'NZ$', SGD: 'S$', MYR: 'RM', PHP: '₱', CZK: 'Kč', CHF: 'CHF' };

export function currencySymbol(currency: string): string {
  return SYMBOLS[currency] ?? currency;
}

/** Amount with its currency sign in front ("€120.50"), or behind for codes ("120.50 SEK"). */
export function priceText(price: number, currency: string, style: MoneyStyle): string {
  const symbol = currencySymbol(currency);
  const amount = amountText(price, style);
  return symbol === currency ? `${amount} ${currency}` : `${symbol}${amount}`;
}

/** Two decimals with a point, as JSON APIs that send amounts as strings do ("120.50"). */
export function decimalString(price: number): string {
  return amountText(price, { decimal: '.', group: '' });
}
