import { formatPrice } from '../../catalogue/price.js';
import type { Product } from '../../catalogue/product.js';
import type { Change } from '../../storage/store.js';
import type { ChangeWire, PageItemWire, ProductWire } from './schemas.js';

export function productWire(product: Product): ProductWire {
  return { pk: product.pk, name: product.name, barcode: product.barcode, price: formatPrice(product.priceCents) };
}

export function pageItemWire(product: Product): PageItemWire {
  return { name: product.name, price: formatPrice(product.priceCents), barcode: product.barcode };
}

export function changeWire(change: Change): ChangeWire {
  return { version: change.version, pk: change.pk, product: change.product === undefined ? null : productWire(change.product) };
}
