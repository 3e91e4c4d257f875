/**
 * What gofmt would change in the generated text, done as the text is written: consecutive
 * lines of cells (struct fields, constant specs) aligned in columns as gofmt's tabwriter
 * aligns them, and blank lines collapsed. The emitters mark cell boundaries with CELL.
 */

/** Separates the cells of a line to align: `Name` CELL `Type`. */
export const CELL = "\u000b";

/**
 * Aligns runs of consecutive lines that hold cells and share their indentation: each cell but
 * the last is padded to the widest of its column plus one space. A line without cells (a
 * comment, a blank line, a brace) ends a run, as it ends gofmt's alignment section.
 */
export function alignCells(text: string): string {
  const lines = text.split("\n");
  const out: string[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length === 0) return;
    const rows = run.map((line) => {
      const indent = /^\t*/.exec(line)![0];
      return { indent, cells: line.slice(indent.length).split(CELL) };
    });
    const widths: number[] = [];
    for (const row of rows) row.cells.slice(0, -1).forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, [...cell].length)));
    for (const row of rows) {
      const cells = row.cells.map((cell, i) => (i < row.cells.length - 1 ? cell + " ".repeat(widths[i]! - [...cell].length + 1) : cell));
      out.push(row.indent + cells.join(""));
    }
    run = [];
  };
  for (const line of lines) {
    if (line.includes(CELL)) {
      const indent = /^\t*/.exec(line)![0];
      if (run.length && /^\t*/.exec(run[0]!)![0] !== indent) flush();
      run.push(line);
    } else {
      flush();
      out.push(line);
    }
  }
  flush();
  return out.join("\n");
}

/** The final form of a generated Go file: cells aligned, at most one blank line in a row, none before a closing brace, one final newline. */
export function goFile(text: string): string {
  return (
    alignCells(text)
      .replace(/[ \t]+$/gm, "")
      .replace(/\n{3,}/g, "\n\n")
      .replace(/\{\n\n/g, "{\n")
      .replace(/\n\n(\t*\})/g, "\n$1")
      .trimEnd() + "\n"
  );
}
