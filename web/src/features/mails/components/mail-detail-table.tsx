import type { ReactNode } from 'react';

/** A table of the drawer: its column headers, then the rows given. */
export function DetailTable({ columns, children }: { columns: readonly string[]; children: ReactNode }) {
  return (
    <table className="detail-table">
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}
