// The bot-challenge pages of the simulated sites (src/simulator/challenge-pages.ts): one look per
// vendor family, status 200 (Akamai's refusal: 403), for an HTML route and a JSON route, and which
// platform stands behind which vendor; the scrapers' rules (block-pages.ts) know each page.
import { describe, expect, it } from 'vitest';
import { PLATFORM_KEYS } from '../../src/platform/registry.ts';
import { akamaiBlock, cloudflareChallenge, datadomeBlock, perimeterxBlock } from '../../src/scrapers/block-pages.ts';
import { CHALLENGE_FAMILIES, challengeFamilyOf, CLOUDFLARE_CHALLENGE_HTML, PLATFORM_CHALLENGE_FAMILY, renderChallenge, renderChallengeOf } from '../../src/simulator/challenge-pages.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('challenge pages', () => {
  it('Cloudflare-style: cf-mitigated and the "Just a moment..." page, for HTML and JSON routes alike', () => {
    for (const type of ['html', 'json'] as const) {
      const page = renderChallengeOf('cloudflare', type);
      expect(page).toEqual({ status: 200, type: 'html', headers: { 'cf-mitigated': 'challenge' }, body: CLOUDFLARE_CHALLENGE_HTML });
    }
    expect(CLOUDFLARE_CHALLENGE_HTML).toBe(
      '<!doctype html><html><head><title>Just a moment...</title></head><body><div id="challenge-running">Checking your browser before accessing the site.</div></body></html>',
    );
  });

  it('PerimeterX-style: the "Access denied" page with #px-captcha, or its JSON with new ids every time', () => {
    const html = renderChallengeOf('perimeterx', 'html');
    expect(html).toMatchObject({ status: 200, type: 'html', headers: {} });
    expect(html.body).toContain('<title>Access to this page has been denied</title>');
    expect(html.body).toContain('<div id="px-captcha"></div>');
    const json = renderChallengeOf('perimeterx', 'json');
    expect(json).toMatchObject({ status: 200, type: 'json', headers: {} });
    const body = json.body as Record<string, unknown>;
    expect(body).toEqual({
      appId: 'PXsim0001',
      jsClientSrc: '/px/client.js',
      firstPartyEnabled: true,
      vid: expect.stringMatching(UUID),
      uuid: expect.stringMatching(UUID),
      hostUrl: '/px/xhr',
      blockScript: '/px/captcha.js',
    });
    expect(body.vid).not.toBe(body.uuid);
    expect((renderChallengeOf('perimeterx', 'json').body as Record<string, unknown>).uuid).not.toBe(body.uuid);
  });

  it('DataDome-style: x-datadome and the captcha-delivery script and iframe, or its JSON with a new cid every time', () => {
    const html = renderChallengeOf('datadome', 'html');
    expect(html).toMatchObject({ status: 200, type: 'html', headers: { 'x-datadome': 'protected' } });
    expect(html.body).toContain('<script src="https://ct.captcha-delivery.com/c.js"></script>');
    expect(html.body).toContain('<iframe src="https://geo.captcha-delivery.com/captcha/?initialCid=sim"></iframe>');
    const json = renderChallengeOf('datadome', 'json');
    expect(json).toMatchObject({ status: 200, type: 'json', headers: { 'x-datadome': 'protected' } });
    const { url } = json.body as { url: string };
    expect(url).toMatch(/^https:\/\/geo\.captcha-delivery\.com\/captcha\/\?initialCid=sim&cid=[0-9a-f]+$/);
    expect((renderChallengeOf('datadome', 'json').body as { url: string }).url).not.toBe(url);
  });

  it('Akamai-style: a 403 "Access Denied" page from AkamaiGHost with a new escaped "Reference #" every time, for HTML and JSON routes alike', () => {
    for (const type of ['html', 'json'] as const) {
      const page = renderChallengeOf('akamai', type);
      expect(page).toMatchObject({ status: 403, type: 'html', headers: { server: 'AkamaiGHost', 'mime-version': '1.0' } });
      const body = String(page.body);
      expect(body).toContain('<TITLE>Access Denied</TITLE>');
      expect(body).toMatch(/Reference&#32;&#35;18&#46;[0-9a-f]{8}&#46;\d{10}&#46;[0-9a-f]{8}/);
    }
    expect(renderChallengeOf('akamai', 'html').body).not.toBe(renderChallengeOf('akamai', 'html').body);
  });

  it('each page is recognised by its own family\'s rule (block-pages.ts) and by no other', () => {
    const rules = { cloudflare: cloudflareChallenge, perimeterx: perimeterxBlock, datadome: datadomeBlock, akamai: akamaiBlock };
    for (const family of CHALLENGE_FAMILIES) {
      for (const type of ['html', 'json'] as const) {
        const page = renderChallengeOf(family, type);
        const answer = { status: page.status, headers: page.headers, body: typeof page.body === 'string' ? page.body : JSON.stringify(page.body) };
        for (const [other, rule] of Object.entries(rules)) {
          if (other === family) expect(rule(answer), `${family} ${type}`).toEqual(expect.any(String));
          else expect(rule(answer), `${other} on ${family} ${type}`).toBeNull();
        }
      }
    }
  });

  it('puts each platform behind its family, and the marketplaces behind Cloudflare', () => {
    expect(Object.keys(PLATFORM_CHALLENGE_FAMILY).sort()).toEqual([...PLATFORM_KEYS].sort());
    const by = (family: string) => PLATFORM_KEYS.filter((p) => PLATFORM_CHALLENGE_FAMILY[p] === family);
    expect(by('cloudflare')).toEqual(['pf_01', 'pf_03', 'pf_11']);
    expect(by('perimeterx')).toEqual(['pf_02', 'pf_06', 'pf_09']);
    expect(by('datadome')).toEqual(['pf_04', 'pf_05', 'pf_10']);
    expect(by('akamai')).toEqual(['pf_07', 'pf_08']);
    expect(challengeFamilyOf('marketplace_b')).toBe('cloudflare');
    expect(renderChallenge('pf_10', 'json').headers).toEqual({ 'x-datadome': 'protected' });
  });
});
