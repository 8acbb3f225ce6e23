/**
 * Which of a subscription's kinds its owner may read now (docs/security.md "Revoking a
 * permission"): the one split the reconciler's members, the pull service, PATCH/create and the
 * GET/status answers all use. The permission itself is the caller's (`mayRead`, from the partners
 * file: http/auth `ownerMayRead`); absent, every owner may read every kind.
 */
import type { Catalog, EventKind } from '../../catalog/index.js';
import { kindOf } from '../../catalog/lookup.js';

/** Whether `owner` may read events of `kind` now. */
export type MayReadKind = (owner: string, kind: EventKind) => boolean;

/**
 * `kinds` (eventIds or names, as stored) split into the ones `owner` may read and the ones it may
 * not, each with its index in `kinds`. Names the catalog does not know are in neither. Pure.
 */
export function splitReadable(catalog: Catalog, kinds: readonly string[], owner: string, mayRead: MayReadKind | undefined): { readonly readable: EventKind[]; readonly refused: { readonly index: number; readonly kind: EventKind }[] } {
  const readable: EventKind[] = [];
  const refused: { index: number; kind: EventKind }[] = [];
  kinds.forEach((k, index) => {
    const kind = kindOf(catalog, k);
    if (kind === undefined) return;
    if (mayRead === undefined || mayRead(owner, kind)) readable.push(kind);
    else refused.push({ index, kind });
  });
  return { readable, refused };
}
