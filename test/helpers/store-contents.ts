import type { Product } from '../../src/catalogue/product.js';
import type { CatalogueStore } from '../../src/storage/store.js';

/** Products read per call while listing a whole store. */
const PAGE = 500;

/** How many products `store` holds. */
export async function storedCount(store: CatalogueStore): Promise<number> {
  return (await store.describeCatalogue()).count;
}

/** Every product `store` holds, in `pk` order, read by keyset paging (no OFFSET). */
export async function storedProducts(store: CatalogueStore): Promise<Product[]> {
  const all: Product[] = [];
  for (;;) {
    const page = await store.listProductsAfter(all.at(-1)?.pk ?? 0, PAGE);
    all.push(...page);
    if (page.length < PAGE) return all;
  }
}
