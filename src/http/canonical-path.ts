/*
 * One spelling per path. A request path can name the same resource in many ways (`//a`, `/a/./b`,
 * `/x/../a`, `/%61`); the server rewrites it to one canonical form before anything routes or
 * authorises it, so that the access middleware and the router always decide on the same path.
 */

// Characters RFC 3986 allows unescaped in a path segment besides the unreserved ones.
const SEGMENT_SAFE_ESCAPES = /%(21|24|26|27|28|29|2A|2B|2C|3A|3B|3D|40)/gi;

interface Segment {
  /** The segment as it reads, percent-encoding undone. */
  text: string;
  /** Its canonical spelling in a path. */
  spelled: string;
}

function readSegment(raw: string): Segment {
  let text: string;
  try {
    text = decodeURIComponent(raw);
  } catch {
    // Not valid percent-encoded UTF-8: it names nothing the router knows; kept as sent.
    return { text: raw, spelled: raw };
  }
  return { text, spelled: encodeURIComponent(text).replace(SEGMENT_SAFE_ESCAPES, (escape) => decodeURIComponent(escape)) };
}

function resolveSegments(path: string): Segment[] {
  const segments: Segment[] = [];
  for (const raw of path.split('/')) {
    const segment = readSegment(raw);
    if (segment.text === '' || segment.text === '.') continue;
    if (segment.text === '..') segments.pop();
    else segments.push(segment);
  }
  return segments;
}

/**
 * The decoded segments of a path: percent-encoding undone, empty segments (repeated slashes)
 * and `.` dropped, `..` resolved (never above the root), as a browser resolves a URL.
 */
export function pathSegments(path: string): string[] {
  return resolveSegments(path).map((s) => s.text);
}

/**
 * The canonical spelling of a path: its segments (see pathSegments) re-encoded minimally, with a
 * trailing slash when the path had one or ended in a dot segment.
 */
export function canonicalPath(path: string): string {
  const segments = resolveSegments(path);
  if (segments.length === 0) return '/';
  const last = readSegment(path.slice(path.lastIndexOf('/') + 1)).text;
  const trailing = path.endsWith('/') || last === '.' || last === '..';
  return `/${segments.map((s) => s.spelled).join('/')}${trailing ? '/' : ''}`;
}

/** Whether every segment of a path is valid percent-encoded UTF-8 (`%ED%A0%80` is not). */
export function isDecodablePath(path: string): boolean {
  return path.split('/').every((segment) => {
    try {
      decodeURIComponent(segment);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Both spellings under which the API serves a path that ends in a slash: with it and without it.
 * The fast paths, which match exact paths before the router sees them, take both.
 */
export function servedSpellings(path: string): [string, string] {
  return [path, path.slice(0, -1)];
}
