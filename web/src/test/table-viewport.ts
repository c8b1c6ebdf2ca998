/**
 * jsdom lays nothing out: every element is 0 px tall and cannot scroll. The mails table mounts only the rows
 * its scroll element (`.table-scroll`) shows, so tests give that element a height and a working scroll:
 * by default tall enough for a whole 50-row page (the tests written before the body was virtualized see
 * every row), and as small as a test needs to see the virtualization.
 */
import { HEADER_HEIGHT, ROW_HEIGHT } from '../features/mails/components/table-layout';

const TALL_ENOUGH_FOR_A_PAGE = HEADER_HEIGHT + 50 * ROW_HEIGHT;

let viewportHeight = TALL_ENOUGH_FOR_A_PAGE;
const scrollTops = new WeakMap<Element, number>();

const isTableScroll = (element: Element) => element.classList.contains('table-scroll');

/** The height the table's scroll element reports from now on (its content height is unchanged). */
export function setTableViewportHeight(pixels: number): void {
  viewportHeight = pixels;
}

export function resetTableViewport(): void {
  viewportHeight = TALL_ENOUGH_FOR_A_PAGE;
}

/** Scrolls the table's scroll element to `top`, as a wheel or a scroll bar would: the scroll event follows. */
export function scrollTableTo(element: Element, top: number): void {
  scrollTops.set(element, top);
  element.dispatchEvent(new Event('scroll'));
}

export function installTableViewport(): void {
  const clientHeight = Object.getOwnPropertyDescriptor(Element.prototype, 'clientHeight')!;
  const scrollTop = Object.getOwnPropertyDescriptor(Element.prototype, 'scrollTop')!;
  const scrollHeight = Object.getOwnPropertyDescriptor(Element.prototype, 'scrollHeight')!;
  // What the table's scroll element holds: the sticky header and the body, as tall as its style says.
  Object.defineProperty(Element.prototype, 'scrollHeight', {
    configurable: true,
    get(this: Element) {
      if (!isTableScroll(this)) return scrollHeight.get!.call(this) as number;
      const body = this.querySelector<HTMLElement>('tbody');
      return Math.max(viewportHeight, HEADER_HEIGHT + (Number.parseFloat(body?.style.height ?? '') || 0));
    },
  });
  Object.defineProperty(Element.prototype, 'clientHeight', {
    configurable: true,
    get(this: Element) {
      return isTableScroll(this) ? viewportHeight : (clientHeight.get!.call(this) as number);
    },
  });
  Object.defineProperty(Element.prototype, 'scrollTop', {
    configurable: true,
    get(this: Element) {
      return isTableScroll(this) ? (scrollTops.get(this) ?? 0) : (scrollTop.get!.call(this) as number);
    },
    set(this: Element, value: number) {
      if (isTableScroll(this)) scrollTops.set(this, value);
      else scrollTop.set!.call(this, value);
    },
  });
  // The virtualizer scrolls with element.scrollTo (keyboard focus moving to a row out of view).
  Element.prototype.scrollTo = function scrollTo(this: Element, optionsOrX?: ScrollToOptions | number, y?: number) {
    if (!isTableScroll(this)) return;
    const top = typeof optionsOrX === 'number' ? y : optionsOrX?.top;
    if (top !== undefined) scrollTableTo(this, top);
  } as Element['scrollTo'];
}
