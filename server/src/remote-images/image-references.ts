/**
 * Whether a URL occurs in a mail's HTML body, as the console would have read it there: what keeps the image
 * proxy (GET /api/v1/mail/{id}/remote-image) from being an open proxy for anyone holding an operator token.
 *
 * The console reads attribute values and style text through the browser's parser (entities decoded, outer
 * whitespace trimmed) and sends them as they are. Here the HTML's character references are decoded the same way,
 * and the URL must stand there whole: between delimiters of an attribute value, a srcset list or a CSS `url()`
 * (quotes, `name=`, whitespace, parentheses, commas, `<` `>`), so a piece of a longer URL does not count. No HTML
 * parser is needed for that (none is a dependency of the server), and a URL the two readings disagree on is
 * refused (404), never fetched.
 */

const NAMED_REFERENCES: Readonly<Record<string, string>> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>', nbsp: '\u00a0' };

/** Decodes `&amp;`, `&quot;`, `&apos;`, `&lt;`, `&gt;`, `&nbsp;` and numeric references (`&#38;`, `&#x26;`). */
export function decodeCharacterReferences(html: string): string {
  return html.replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]+));/g, (whole, decimal?: string, hex?: string, name?: string) => {
    if (name !== undefined) return NAMED_REFERENCES[name] ?? whole;
    const codePoint = decimal !== undefined ? Number(decimal) : Number.parseInt(hex!, 16);
    return codePoint > 0 && codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : whole;
  });
}

const BEFORE = new Set(['"', "'", '(', ',', '>']);
const AFTER = new Set(['"', "'", ')', ',', '<', '>']);
const isSpace = (character: string | undefined) => character !== undefined && /\s/.test(character);

/**
 * An unquoted attribute value (`<img src=https://…>`): `=` after an attribute name. Not `?u=https://…` inside
 * another URL, where the name follows `?` or `&`, so a URL carried in a link's query does not count.
 */
function isUnquotedAttributeValue(text: string, at: number): boolean {
  return /[\s"'/][a-zA-Z][\w:-]*=$/.test(text.slice(Math.max(0, at - 64), at));
}

/** True when `url` occurs in `html` (character references decoded) standing whole between delimiters. */
export function htmlReferencesUrl(html: string, url: string): boolean {
  if (url.length === 0) return false;
  const text = decodeCharacterReferences(html);
  for (let at = text.indexOf(url); at !== -1; at = text.indexOf(url, at + 1)) {
    const before = at === 0 ? undefined : text[at - 1];
    const after = text[at + url.length];
    const startsWhole = before === undefined || BEFORE.has(before) || isSpace(before) || isUnquotedAttributeValue(text, at);
    const endsWhole = after === undefined || AFTER.has(after) || isSpace(after);
    if (startsWhole && endsWhole) return true;
  }
  return false;
}
