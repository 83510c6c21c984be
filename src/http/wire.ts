import { formatPrice } from '../catalogue/price.js';
import type { Product } from '../catalogue/product.js';
import type { PageItemWire, ProductWire } from './schemas.js';

export function productWire(product: Product): ProductWire {
  return { pk: product.pk, name: product.name, barcode: product.barcode, price: formatPrice(product.priceCents) };
}

export function pageItemWire(product: Product): PageItemWire {
  return { name: product.name, price: formatPrice(product.priceCents), barcode: product.barcode };
}

/** The path part of a request URL, exactly as the client wrote it. */
export function requestPath(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** The query parameters of a request URL. */
export function requestParams(url: string): URLSearchParams {
  const query = url.indexOf('?');
  return new URLSearchParams(query === -1 ? '' : url.slice(query + 1));
}
