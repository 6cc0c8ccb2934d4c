/**
 * Rule evaluation of a dataview's headlines and rows (DESIGN 4.1): the rules that apply to the
 * dataview (rules.ts, cached on its node), the candidates for each column, the sampler's own cell
 * severities (fkm `matches`, the higher one wins), and the leaves of the tree they set. Work is
 * proportional to the change: a table message evaluates the cells of its row only, and a cell no
 * rule or sampler targets gets no node.
 */
import type { WireSeverities } from "../../link/protocol.js";
import type { Severity } from "../../messages/types.js";
import type { DataviewTarget } from "./item-target.js";
import type { Publication } from "./publication.js";
import { candidates, type DataviewRules, evaluateCandidates, type RuleBook, SEVERITY_RANK } from "./rules.js";
import type { Node, SeverityTree } from "./severity-tree.js";

/** Sets the leaves of dataviews from their values and the rules. */
export class DataviewEvaluation {
  private readonly tree: SeverityTree;

  constructor(
    private readonly publication: Publication,
    private readonly rules: RuleBook,
  ) {
    this.tree = publication.tree;
  }

  private rulesOf(dataview: Node, names: DataviewTarget): DataviewRules {
    const rules = this.rules.forDataview(names, dataview.rules);
    dataview.rules = rules;
    return rules;
  }

  /** A dataview's headlines: each one that rules target (or that has a node) evaluated. */
  headlines(dataview: Node, names: DataviewTarget, row: Readonly<Record<string, string>>): void {
    const rules = this.rulesOf(dataview, names);
    for (const [name, node] of dataview.children) if (row[name] === undefined) this.tree.remove(node);
    for (const name in row) {
      const value = row[name] as string;
      const list = candidates(rules.headlines, rules.byHeadline, name);
      const existing = dataview.children.get(name);
      if (list.length === 0 && existing === undefined) continue;
      const evaluated = evaluateCandidates(list, undefined, value);
      const node =
        existing ?? this.tree.child(dataview, { level: "headline", target: { ...names, column: name } });
      this.leaf(node, evaluated, value);
    }
  }

  /**
   * A row of a dataview: each cell that rules or the sampler target (or that has a node) evaluated;
   * cells no longer in the row are removed.
   */
  cells(
    dataview: Node,
    names: DataviewTarget,
    rowName: string,
    row: Readonly<Record<string, string>>,
    severities: WireSeverities | undefined,
  ): void {
    const rules = this.rulesOf(dataview, names);
    const rows = dataview.rows as Map<string, Map<string, Node>>;
    const cells = rows.get(rowName);
    if (cells !== undefined)
      for (const [column, node] of cells) if (row[column] === undefined) this.tree.remove(node);
    if (rules.cells.length === 0 && severities === undefined && cells === undefined) return;
    for (const column in row) {
      const value = row[column] as string;
      const list = candidates(rules.cells, rules.byColumn, column);
      let sampler: Severity | undefined;
      if (severities !== undefined) for (const [c, s] of severities) if (c === column) sampler = s;
      const existing = cells?.get(column);
      if (existing === undefined && sampler === undefined && !list.some((r) => r.row(rowName))) continue;
      let evaluated = evaluateCandidates(list, rowName, value);
      if (sampler !== undefined && SEVERITY_RANK[sampler] > SEVERITY_RANK[evaluated]) evaluated = sampler;
      this.leaf(existing ?? this.tree.cell(dataview, names, rowName, column), evaluated, value);
    }
  }

  /** A cell's or headline's new evaluation and value. */
  private leaf(node: Node, evaluated: Severity, value: string): void {
    const before = node.value;
    node.value = value;
    node.evaluated = evaluated;
    this.publication.valueChanged(node, before, value);
    this.tree.setSeverity(node, this.tree.leafSeverity(node));
    this.tree.collect(node);
  }
}
