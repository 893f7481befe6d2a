// Lists: a page you can await, and an async iterator over every record
// that follows the cursors.

import type { ListParams, ListResponse } from "./types.js";

/** Fetches one page for the given list parameters. */
export type PageFetcher<T> = (params: ListParams) => Promise<{ data: ListResponse<T>; requestId: string | undefined }>;

/**
 * One page of a list. Its records are `data`; `nextPage()` fetches the
 * next one, and iterating it with `for await` walks this page and every
 * later one.
 */
export class Page<T> implements ListResponse<T>, AsyncIterable<T> {
  readonly object = "list" as const;
  readonly data: T[];
  readonly first_id: string | null;
  readonly last_id: string | null;
  readonly has_more: boolean;
  /** The X-Request-Id of the answer. */
  readonly requestId: string | undefined;
  /** The parameters this page was fetched with. */
  readonly params: Readonly<ListParams>;
  readonly #fetch: PageFetcher<T>;

  constructor(fetcher: PageFetcher<T>, params: ListParams, body: ListResponse<T>, requestId: string | undefined) {
    this.#fetch = fetcher;
    this.params = params;
    this.data = body.data ?? [];
    this.first_id = body.first_id ?? null;
    this.last_id = body.last_id ?? null;
    this.has_more = !!body.has_more;
    this.requestId = requestId;
  }

  /** Whether a page follows (in the walk's direction). */
  hasNextPage(): boolean {
    return this.has_more && this.data.length > 0;
  }

  /**
   * The parameters of the next page: after = last_id, or with `before`
   * (a walk backwards) before = first_id. Undefined when there is none.
   */
  nextPageParams(): ListParams | undefined {
    if (!this.hasNextPage()) return undefined;
    const p: ListParams = { ...this.params };
    if (p.before) {
      if (!this.first_id || this.first_id === p.before) throw new Error(`ams: pagination stopped: has_more but the cursor (${this.first_id}) does not move on`);
      p.before = this.first_id;
    } else {
      if (!this.last_id || this.last_id === p.after) throw new Error(`ams: pagination stopped: has_more but the cursor (${this.last_id}) does not move on`);
      p.after = this.last_id;
    }
    return p;
  }

  /** Fetches the next page; throws when there is none (see hasNextPage). */
  async nextPage(): Promise<Page<T>> {
    const p = this.nextPageParams();
    if (!p) throw new Error("ams: no next page (has_more is false)");
    const { data, requestId } = await this.#fetch(p);
    return new Page(this.#fetch, p, data, requestId);
  }

  /**
   * Every record from this page on, fetching pages as needed. With
   * `before` the walk goes the other way: each page's records come last
   * to first, nearest to the `before` record first.
   */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let page: Page<T> = this;
    for (;;) {
      const records = page.params.before ? [...page.data].reverse() : page.data;
      yield* records;
      if (!page.hasNextPage()) return;
      page = await page.nextPage();
    }
  }
}

/**
 * The answer of a list method: await it for the first page, or iterate
 * it with `for await` for every record across pages.
 *
 * ```ts
 * const page = await client.tasks.list({ limit: 2 });
 * for await (const task of client.tasks.list({ limit: 2 })) { ... }
 * ```
 */
export class PagePromise<T> implements Promise<Page<T>>, AsyncIterable<T> {
  readonly [Symbol.toStringTag] = "PagePromise";
  readonly #fetch: PageFetcher<T>;
  readonly #params: ListParams;
  #promise: Promise<Page<T>> | undefined;

  constructor(fetcher: PageFetcher<T>, params: ListParams) {
    this.#fetch = fetcher;
    this.#params = { ...params };
  }

  #first(): Promise<Page<T>> {
    // Fetched once, on first use (await or iteration).
    this.#promise ??= this.#fetch(this.#params).then(({ data, requestId }) => new Page(this.#fetch, this.#params, data, requestId));
    return this.#promise;
  }

  then<R1 = Page<T>, R2 = never>(
    onfulfilled?: ((value: Page<T>) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.#first().then(onfulfilled, onrejected);
  }

  catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<Page<T> | R> {
    return this.#first().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<Page<T>> {
    return this.#first().finally(onfinally);
  }

  /** Every record of the list from the selected page on. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    yield* await this.#first();
  }

  /** Collects every record into an array (at most `max`, default all). */
  async toArray(max = Infinity): Promise<T[]> {
    const out: T[] = [];
    if (max <= 0) return out;
    for await (const v of this) {
      out.push(v);
      if (out.length >= max) break;
    }
    return out;
  }
}
