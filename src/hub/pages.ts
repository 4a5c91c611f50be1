import { webDocument } from '../http/web-document.ts';
import type { HubPage } from './contract.ts';

const documents = new Map<HubPage, string>();

/**
 * The hub's pages are the review UI's one document (web/, built by Vite),
 * told by a meta tag which page it is: the inbox, the sign-in form, or a
 * review under /r/<id>/ (which then shows a plan's versions and the way back
 * to the inbox). Its scripts are unchanged, so its CSP is the review UI's.
 */
export function hubDocument(page: HubPage): string {
  let html = documents.get(page);
  if (html === undefined) {
    html = webDocument().replace('<head>', `<head><meta name="gatehouse-hub" content="${page}">`);
    documents.set(page, html);
  }
  return html;
}
