// The harness's network policy in Sandgate's terms, and a sandbox's network
// in words for the agent. 'allow-all' is mode `open`, 'deny-all' `none`,
// 'custom' an `allow` list of hosts and CIDRs. Sandgate has no deny-list of
// its own: its egress proxy always refuses private, loopback, link-local
// (cloud metadata) and other special ranges unless an allowed CIDR names them,
// so a `deniedCIDRs` entry is honoured when it lies in those ranges and no
// allowed CIDR overlaps it, and refused otherwise (never silently dropped).
import type { HarnessV1NetworkPolicy } from '@ai-sdk/harness';
import { SandgateError } from '../errors.js';
import type { Network, NetworkPolicy } from '../types.js';

/** Sandgate fields added to the `open` and `allow` policies the harness modes become. */
export type SandgateNetworkOptions = Omit<NetworkPolicy, 'mode' | 'hosts' | 'cidrs'>;

/** The ranges Sandgate's egress proxy refuses unless a cidr names them (docs/policy.md "Decisions"). */
const REFUSED_RANGES = [
  '0.0.0.0/8', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '127.0.0.0/8',
  '169.254.0.0/16', '192.0.0.0/24', '192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24',
  '192.88.99.0/24', '198.18.0.0/15', '224.0.0.0/4', '240.0.0.0/4', '255.255.255.255/32',
  '::/128', '::1/128', '100::/64', '2001::/23', '2001:db8::/32', '3fff::/20', '2002::/16',
  '64:ff9b:1::/48', 'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8',
].map(parseCidr);

interface Cidr {
  bits: 32 | 128;
  value: bigint;
  prefix: number;
}

function parseV4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((v, p) => (v << 8n) | BigInt(Number(p)), 0n);
}

function parseV6(text: string): bigint | undefined {
  // A dotted IPv4 tail (::ffff:192.0.2.1) stands for the last two groups.
  let low = 0n;
  if (text.includes('.')) {
    const colon = text.lastIndexOf(':');
    const v4 = parseV4(text.slice(colon + 1));
    if (v4 === undefined) return undefined;
    low = v4;
    text = text.slice(0, colon + 1) + '0:0';
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if ([...head, ...tail].some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  const zeros = 8 - head.length - tail.length;
  if (halves.length === 1 ? zeros !== 0 : zeros < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? zeros : 0).fill('0'), ...tail];
  return all.reduce((v, g) => (v << 16n) | BigInt(parseInt(g, 16)), 0n) | low;
}

/** `ADDR/PREFIX` or a bare address, IPv4 or IPv6; throws on anything else. */
export function parseCidr(text: string): Cidr {
  const [addr = '', prefixText] = text.split('/');
  const v4 = parseV4(addr);
  const bits = v4 !== undefined ? 32 : 128;
  const value = v4 ?? parseV6(addr);
  const prefix = prefixText === undefined ? bits : /^\d+$/.test(prefixText) ? Number(prefixText) : NaN;
  if (value === undefined || !(prefix >= 0 && prefix <= bits)) throw new SandgateError(400, 'invalid_network', `${JSON.stringify(text)} is not an address or ADDRESS/PREFIX`);
  return { bits, value, prefix };
}

/** Whether `outer` holds all of `inner`. */
function contains(outer: Cidr, inner: Cidr): boolean {
  if (outer.bits !== inner.bits || outer.prefix > inner.prefix) return false;
  const shift = BigInt(outer.bits - outer.prefix);
  return outer.value >> shift === inner.value >> shift;
}

/** Refuses a denied CIDR that Sandgate would not refuse under this policy. */
function checkDenied(denied: readonly string[], allowed: readonly string[]): void {
  const allow = allowed.map(parseCidr);
  for (const text of denied) {
    const d = parseCidr(text);
    const overlapping = allowed.find((_, i) => contains(allow[i]!, d) || contains(d, allow[i]!));
    if (overlapping !== undefined)
      throw new SandgateError(400, 'invalid_network', `deniedCIDRs: ${text} overlaps allowedCIDRs ${overlapping}; Sandgate cannot allow a range and deny part of it`);
    if (!REFUSED_RANGES.some((r) => contains(r, d)))
      throw new SandgateError(
        400,
        'invalid_network',
        `deniedCIDRs: ${text} is a public range; Sandgate refuses only private, loopback, link-local and other special ranges by itself and has no deny-list for others`
      );
  }
}

/** The Sandgate network a harness policy asks for (`options` adds ports and limits to `open` and `allow`). */
export function toSandgateNetwork(policy: HarnessV1NetworkPolicy, options: SandgateNetworkOptions = {}): Network {
  switch (policy.mode) {
    case 'allow-all':
      return Object.keys(options).length ? { ...options, mode: 'open' } : 'open';
    case 'deny-all':
      return 'none';
    case 'custom': {
      const hosts = [...(policy.allowedHosts ?? [])];
      const cidrs = [...(policy.allowedCIDRs ?? [])];
      checkDenied(policy.deniedCIDRs ?? [], cidrs);
      return { ...options, mode: 'allow', hosts, cidrs };
    }
    default:
      throw new SandgateError(400, 'invalid_network', `Unknown network policy mode ${JSON.stringify((policy as { mode?: unknown }).mode)}`);
  }
}

/** Whether a value is a harness policy rather than a Sandgate network. */
export function isHarnessPolicy(value: unknown): value is HarnessV1NetworkPolicy {
  const mode = (value as { mode?: unknown } | null)?.mode;
  return mode === 'allow-all' || mode === 'deny-all' || mode === 'custom';
}

/** A sandbox's network, as a sentence for the agent. */
export function describeNetwork(network: Network): string {
  const policy: NetworkPolicy = typeof network === 'string' ? { mode: network } : network;
  const ports = `port${(policy.ports ?? [80, 443]).length === 1 ? '' : 's'} ${(policy.ports ?? [80, 443]).join(', ')}`;
  const proxy =
    'through the HTTP(S) proxy that HTTP_PROXY/HTTPS_PROXY name (curl, pip, npm, git and Python use it; ' +
    'a refused host gets HTTP 403 from it with a body naming the host and the reason: do not retry it, ' +
    'tell the user which host you need)';
  switch (policy.mode) {
    case 'none':
    case 'loopback':
      return 'Network: none. Programs cannot reach the internet or other machines; do not try to download anything.';
    case 'open':
      return `Network: programs reach public hosts on ${ports} ${proxy}. Private and link-local addresses are refused.`;
    case 'allow': {
      const allowed = [...(policy.hosts ?? []), ...(policy.cidrs ?? [])];
      return `Network: programs reach only ${allowed.length ? allowed.join(', ') : 'no host'} on ${ports}, ${proxy}.`;
    }
  }
}
