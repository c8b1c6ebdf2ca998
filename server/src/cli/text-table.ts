/** The command line's tables for a terminal: the header and the rows in columns two spaces apart, as lines. */
export function formatTextTable(header: readonly string[], rows: readonly string[][]): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
