/**
 * One Prometheus exposition from several: every sample gets an `environment` label, and each
 * metric family keeps a single `# HELP` / `# TYPE` header, as the text format requires.
 */

interface Family {
  header: string[];
  samples: string[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*)?(\s.*)$/;

/** Adds `environment="<name>"` as the first label of one sample line. */
function labelled(line: string, environment: string): string {
  const match = SAMPLE.exec(line);
  if (match === null) return line;
  const [, name, labels, rest] = match;
  const label = `environment="${environment}"`;
  if (labels === undefined) return `${name}{${label}}${rest}`;
  // `{}` has nothing to separate from; otherwise the new label goes first.
  return labels.startsWith('{}') ? `${name}{${label}}${labels.slice(2)}${rest}` : `${name}{${label},${labels.slice(1)}${rest}`;
}

/**
 * Merges the expositions of several environments, in the order given. Environment names are
 * validated at creation (letters, digits, `_ . -`), so they need no escaping as label values.
 */
export function mergeExpositions(parts: ReadonlyArray<{ environment: string; text: string }>): string {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let found = families.get(name);
    if (found === undefined) {
      found = { header: [], samples: [] };
      families.set(name, found);
    }
    return found;
  };
  for (const { environment, text } of parts) {
    let current: Family | undefined;
    let headerOpen = false;
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
      if (comment !== null) {
        const target = family(comment[2]!);
        // The first environment that names a family writes its header; the others' are dropped.
        headerOpen = target !== current ? target.header.length === 0 : headerOpen;
        current = target;
        if (headerOpen) target.header.push(line);
        continue;
      }
      if (line.startsWith('#')) continue;
      const name = SAMPLE.exec(line)?.[1];
      // A sample with no header of its own is kept as a family of its own name.
      const target = current ?? family(name ?? line);
      target.samples.push(labelled(line, environment));
    }
  }
  const out: string[] = [];
  for (const { header, samples } of families.values()) out.push(...header, ...samples);
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}
