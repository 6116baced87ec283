/**
 * The column layout of the illumos ZFS tools (`zfs list`, `zpool list`; libzfs zprop_width):
 * each column at least as wide as its header and its minimum (5 for a number, the longest
 * value name for an index property) and as its widest cell, two spaces between columns,
 * numbers right-aligned, no padding after a left-aligned last column; with -H no header and
 * one tab between cells.
 */
export interface TableColumn {
  header: string;
  right: boolean;
  minWidth?: number;
}

export function formatTable(columns: readonly TableColumn[], rows: readonly string[][], scripted: boolean): string {
  if (scripted) return rows.map((r) => `${r.join('\t')}\n`).join('');
  const widths = columns.map((c, i) => Math.max(c.header.length, c.minWidth ?? 0, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `${cells
      .map((cell, i) => {
        const last = i === cells.length - 1;
        if (columns[i]!.right) return cell.padStart(widths[i]!);
        return last ? cell : cell.padEnd(widths[i]!);
      })
      .join('  ')}\n`;
  return [line(columns.map((c) => c.header)), ...rows.map(line)].join('');
}
