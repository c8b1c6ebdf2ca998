/** Whether a URL stands whole in a mail's HTML (remote-images/image-references.ts): what keeps the proxy closed. */
import { describe, expect, it } from 'vitest';
import { decodeCharacterReferences, htmlReferencesUrl } from '../../src/remote-images/image-references.js';

describe('decodeCharacterReferences', () => {
  it.each([
    ['a&amp;b', 'a&b'],
    ['&quot;&apos;&lt;&gt;', `"'<>`],
    ['&#38;&#x26;&#X26;', '&&&'],
    ['&unknown; &amp', '&unknown; &amp'],
    ['&#0; &#x110000;', '&#0; &#x110000;'],
  ])('%j → %j', (html, expected) => {
    expect(decodeCharacterReferences(html)).toBe(expected);
  });
});

describe('htmlReferencesUrl', () => {
  const url = 'https://img.example/a.png?x=1&y=2';
  it.each([
    ['an img src', '<img src="https://img.example/a.png?x=1&amp;y=2">'],
    ['single quotes, numeric references', "<img src='https://img.example/a.png?x=1&#38;y=2'>"],
    ['an unquoted attribute', '<img src=https://img.example/a.png?x=1&amp;y=2>'],
    ['a srcset candidate', '<img srcset="https://img.example/b.png 1x, https://img.example/a.png?x=1&amp;y=2 2x">'],
    ['a srcset without spaces', '<img srcset="https://img.example/b.png 1x,https://img.example/a.png?x=1&amp;y=2,">'],
    ['a CSS url()', '<td style="background:url(https://img.example/a.png?x=1&amp;y=2)">'],
    ['surrounding whitespace', '<img src="\n  https://img.example/a.png?x=1&amp;y=2  ">'],
  ])('found in %s', (_case, html) => {
    expect(htmlReferencesUrl(html, url)).toBe(true);
  });

  it.each([
    ['a longer URL it is the start of', '<img src="https://img.example/a.png?x=1&amp;y=23">'],
    ['a longer URL it is the end of', '<img src="https://evil.example/?u=https://img.example/a.png?x=1&amp;y=2">'],
    ['another mail', '<img src="https://img.example/b.png">'],
    ['nothing', ''],
  ])('not found in %s', (_case, html) => {
    expect(htmlReferencesUrl(html, url)).toBe(false);
  });

  it('never matches an empty URL', () => {
    expect(htmlReferencesUrl('<img src="">', '')).toBe(false);
  });
});
