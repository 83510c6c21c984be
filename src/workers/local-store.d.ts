// @fastify/rate-limit's in-process store, which the primary keeps for every worker; the package ships no
// types for it.
declare module '@fastify/rate-limit/store/LocalStore.js' {
  export default class LocalStore {
    constructor(continueExceeding: boolean, exponentialBackoff: boolean, cache?: number);
    incr(key: string, callback: (error: Error | null, result: { current: number; ttl: number }) => void, timeWindow: number, max: number): void;
  }
}
