import { describe, expect, it } from 'vitest';
import { listRemoteImageUrls, rewriteRemoteImages, rewriteSrcset } from './remote-images';

describe('rewriteSrcset', () => {
  const upper = (url: string) => url.toUpperCase();
  it.each([
    ['a.png 1x, b.png 2x', 'A.PNG 1x, B.PNG 2x'],
    ['a.png 1x,b.png 2x', 'A.PNG 1x,B.PNG 2x'],
    ['a.png,b.png', 'A.PNG,B.PNG'],
    ['https://cdn.example/w_100,h_50/a.png 100w', 'HTTPS://CDN.EXAMPLE/W_100,H_50/A.PNG 100w'],
    ['  a.png  ', '  A.PNG  '],
    ['', ''],
  ])('%j → %j', (srcset, expected) => {
    expect(rewriteSrcset(srcset, upper)).toBe(expected);
  });
});

describe('remote images of an HTML body', () => {
  it('lists img src and srcset, source srcset, background and CSS url(), once each, and no data:, cid: or relative URL', () => {
    const html =
      '<style>.a { background-image: url("http://img.example/style.png") }</style>' +
      '<table background="https://img.example/table.png"><tr><td style="background:url(https://img.example/cell.png)">x</td></tr></table>' +
      '<picture><source srcset="https://img.example/wide.webp 2x"><img src=" https://img.example/a.png " srcset="https://img.example/a.png 1x"></picture>' +
      '<img src="data:image/gif;base64,R0lGOD"><img src="cid:part1"><img src="/relative.png">';
    expect(listRemoteImageUrls(html)).toEqual([
      'https://img.example/a.png',
      'https://img.example/wide.webp',
      'https://img.example/table.png',
      'https://img.example/cell.png',
      'http://img.example/style.png',
    ]);
  });

  it('leaves a body without remote images exactly as written', () => {
    const html = '<p>Hi<br>there &amp; <b>you</b>';
    expect(rewriteRemoteImages(html, () => 'data:,x')).toBe(html);
  });
});
