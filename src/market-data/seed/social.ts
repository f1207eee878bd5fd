// The seed's artist audiences: current followers (and monthly listeners on streaming networks)
// on 2 to 5 social networks, and with full detail 8 weekly snapshots growing to today's figures.
import { DAY_MS } from '../rollup.ts';
import { HOUR_MS, type SeedArtist } from './catalog.ts';
import { Random, STREAM } from './random.ts';
import type { Detail } from './statistics.ts';
import { SOCIAL_NETWORKS } from './vocabulary.ts';

export interface SocialMetricRow {
  artist_id: number;
  network: string;
  handle: string;
  profile_url: string;
  followers: number;
  monthly_listeners: number | null;
  updated_at: Date;
}

export interface SocialSnapshotRow {
  artist_id: number;
  network: string;
  followers: number;
  monthly_listeners: number | null;
  captured_at: Date;
}

const PROFILE_HOSTS: Record<string, string> = {
  spotify: 'https://open.spotify.example/artist/',
  instagram: 'https://instagram.example/',
  youtube: 'https://youtube.example/@',
  tiktok: 'https://tiktok.example/@',
  x: 'https://x.example/',
  facebook: 'https://facebook.example/',
};

/** Audiences on 2 to 5 networks, and (full detail) 8 weekly snapshots growing to today's. */
export function generateArtistSocial(
  seed: number,
  artistIndex: number,
  artistId: number,
  artist: SeedArtist,
  now: Date,
  detail: Detail,
): { metrics: SocialMetricRow[]; snapshots: SocialSnapshotRow[] } {
  if (detail === 'none') return { metrics: [], snapshots: [] };
  const r = new Random(seed, STREAM.social, artistIndex);
  const networks = SOCIAL_NETWORKS.filter(() => r.chance(0.6)).slice(0, 5);
  if (networks.length < 2) networks.push(...SOCIAL_NETWORKS.filter((n) => !networks.includes(n)).slice(0, 2 - networks.length));
  const metrics: SocialMetricRow[] = [];
  const snapshots: SocialSnapshotRow[] = [];
  const updatedAt = new Date(now.getTime() - r.int(0, 48) * HOUR_MS);
  for (const network of networks) {
    const followers = Math.round(r.logNormal(20_000 * Math.pow(50, artist.popularity * 3), 1.1));
    const listeners = network === 'spotify' || network === 'youtube' ? Math.round(followers * (0.6 + 2 * r.next())) : null;
    metrics.push({
      artist_id: artistId,
      network,
      handle: artist.slug.replace(/-/g, ''),
      profile_url: `${PROFILE_HOSTS[network]}${artist.slug}`,
      followers,
      monthly_listeners: listeners,
      updated_at: updatedAt,
    });
    if (detail !== 'full') continue;
    const weeklyGrowth = 0.002 + 0.02 * r.next();
    for (let w = 7; w >= 0; w--) {
      const factor = Math.pow(1 + weeklyGrowth, -w);
      snapshots.push({
        artist_id: artistId,
        network,
        followers: Math.round(followers * factor),
        monthly_listeners: listeners === null ? null : Math.round(listeners * factor * (0.95 + 0.1 * r.next())),
        captured_at: new Date(updatedAt.getTime() - w * 7 * DAY_MS),
      });
    }
  }
  return { metrics, snapshots };
}
