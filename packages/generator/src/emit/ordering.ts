/**
 * ordering.ts: the protocol's ordering rules as a typed constant, and the checker built
 * from them by the support module's engine. The rules come from the model already
 * expanded (see generator/ordering.ts), so the output lists everything explicitly.
 */
import type { ProtocolModel } from "../model.js";
import { render } from "../render.js";

export function emitOrdering(model: ProtocolModel, context: { header: string; support: string }): string {
  return render("ordering.ts", {
    ...context,
    protocol: { title: model.title, version: model.version },
    rules: model.ordering.map((r) => ({ description: r.description, code: JSON.stringify(r.rule, null, 2).replace(/\n/g, "\n  ") })),
  });
}
