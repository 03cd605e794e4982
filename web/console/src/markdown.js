// Markdown previews, loaded on demand (a separate chunk: marked and
// DOMPurify are not part of the first load).
//
// renderMarkdown returns a DOM fragment: marked's HTML sanitized by
// DOMPurify (no script, no event-handler attributes, no javascript:
// URLs, no style, no form controls), to be inserted as nodes. The HTML
// made from user data is never assigned to innerHTML.
import { marked } from 'marked';
import DOMPurify from 'dompurify';

export function renderMarkdown(text) {
  return DOMPurify.sanitize(marked.parse(text || '', { async: false }), {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
    FORBID_ATTR: ['style'],
  });
}
