// Markdown previews, loaded on demand (a separate chunk: marked and
// DOMPurify are not part of the first load).
//
// renderMarkdown returns a DOM fragment: marked's HTML sanitized by
// DOMPurify, to be inserted as nodes (the HTML made from user data is
// never assigned to innerHTML):
//   - HTML elements only (no SVG or MathML), no script, no event-handler
//     attributes, no style, no form controls, no id/name (no DOM
//     clobbering of the console's globals);
//   - links: http(s), mailto and relative URLs only (DOMPurify's URI
//     rule: no javascript:, data: or blob:), opened in a new tab with
//     rel="noopener noreferrer" and no download attribute, so a link
//     never replaces the console nor hands it a file as a document;
//   - images: only data: URLs of raster types; any other image (another
//     origin, which the CSP refuses anyway, or a same-origin path, which
//     has no token) is replaced by its alt text.
import { marked } from 'marked';
import DOMPurify from 'dompurify';

const RASTER_DATA = /^data:image\/(png|jpeg|gif|webp|avif)[;,]/i;

export function renderMarkdown(text) {
  const frag = DOMPurify.sanitize(marked.parse(text || '', { async: false }), {
    RETURN_DOM_FRAGMENT: true,
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option', 'dialog', 'template', 'slot'],
    FORBID_ATTR: ['style', 'id', 'name', 'download', 'target', 'ping', 'srcset', 'formaction', 'popover', 'popovertarget'],
    ALLOW_DATA_ATTR: false,
  });
  for (const a of frag.querySelectorAll('a[href]')) {
    a.setAttribute('target', '_blank');
    a.setAttribute('rel', 'noopener noreferrer');
  }
  for (const img of frag.querySelectorAll('img')) {
    if (!RASTER_DATA.test(img.getAttribute('src') || '')) img.replaceWith(document.createTextNode(img.getAttribute('alt') || ''));
  }
  return frag;
}
