import Router from '@koa/router';
import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { literalStart, VariableRoutes } = await coreModule<typeof import('../../../packages/core/dist/http/routes.js')>('http/routes.js');

const noop = async () => undefined;

/** The router's layers for these routes: a template string is registered as the gateway registers it, a RegExp as a pattern. */
function layersOf(routes: ReadonlyArray<string | RegExp>): Router['stack'] {
  const router = new Router({ sensitive: true });
  for (const route of routes) {
    if (typeof route === 'string') router.register(route, ['GET'], [noop], {});
    else router.all(route, noop);
  }
  return router.stack;
}

/** A small deterministic generator (mulberry32): the same paths on every run, so a failure repeats. */
function generator(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

describe('unit: the routes with parameters, tested by the start of their path (http/routes.ts)', () => {
  it("reads the literal start of path-to-regexp's expressions and of the gateway's patterns", () => {
    const startOf = (route: string | RegExp) => literalStart(layersOf([route])[0]!.regexp);
    expect(startOf('/api/runs/:id/cancel')).to.equal('/api/runs/');
    expect(startOf('/api/x-:y/z')).to.equal('/api/x-');
    expect(startOf('/api/files/*rest')).to.equal('/api/files/');
    expect(startOf(/^\/api\/tk\/[^/]+\/[^/]/)).to.equal('/api/tk/');
    // What it cannot read for sure gives a shorter start, or none: such a route is tested for every path.
    expect(startOf('/api/a{/:b}/c'), 'an optional part makes an alternation').to.equal('');
    expect(startOf(/^\/api\/tks?\/x/), 'a quantified character').to.equal('/api/tk');
    expect(startOf(/^(?:\/api\/tk\/)?x/), 'an optional first group').to.equal('');
    expect(startOf(/^\/API\/tk\//i), 'case-insensitive').to.equal('');
    expect(startOf(/^\/api\/tk\//m), 'multiline').to.equal('');
    expect(startOf(/\/api\/tk\//), 'not anchored').to.equal('');
    expect(startOf(/^\/api\/t\d\//), 'a class escape').to.equal('/api/t');
  });

  it('finds for 20,000 generated paths the same routes, in the same order, as testing every route', () => {
    const routes: Array<string | RegExp> = [
      '/api/runs/:id/cancel',
      '/api/runs/:id',
      '/api/:kind/items',
      '/api/schedules/:id/pause',
      '/api/sched-:id/x',
      '/api/a{/:b}/c',
      '/api/files/*rest',
      '/:anything/runs/:id',
      /^\/api\/tk\/[^/]+\/[^/]/,
      /^\/api\/tks?\/[^/]+/,
      /^\/api\/RUNS\//i,
      /^\/api\/(?:runs|tk)\/x/,
      /\/cancel$/,
    ];
    const layers = layersOf(routes);
    const variable = new VariableRoutes(layers);
    const pieces = [
      '',
      '/',
      'api',
      'API',
      'runs',
      'RUNS',
      'tk',
      'tks',
      'schedules',
      'sched-1',
      'a',
      'b',
      'c',
      'x',
      'files',
      'items',
      'cancel',
      'pause',
      '1',
      'web-1',
      '%2F',
      ':id',
    ];
    const next = generator(51);
    let matched = 0;
    for (let n = 0; n < 20_000; n++) {
      // Half of them under /api, where most routes are.
      const segments = Array.from({ length: next(6) }, (_, i) => (i === 0 && next(2) === 0 ? 'api' : pieces[next(pieces.length)]!));
      const path = `${next(8) === 0 ? '' : '/'}${segments.join('/')}${next(4) === 0 ? '/' : ''}`;
      const everyRoute = layers.filter((layer) => layer.match(path)).map((layer) => String(layer.path));
      const candidates = variable.candidates(path);
      expect(
        candidates.filter((layer) => layer.match(path)).map((layer) => String(layer.path)),
        path,
      ).to.deep.equal(everyRoute);
      if (everyRoute.length > 0) matched++;
    }
    // The paths reach the routes: a generator that matched nothing would prove nothing.
    expect(matched).to.be.greaterThan(1000, String(matched));
  });

  it('tests only the routes of its start for a toolkit call', () => {
    const layers = layersOf(['/api/runs/:id/cancel', '/api/schedules/:id/pause', /^\/api\/choices\/[^/]+\/[^/]/, /^\/api\/tk\/[^/]+\/[^/]/]);
    expect(new VariableRoutes(layers).candidates('/api/tk/app/bench/json').map((layer) => String(layer.path))).to.deep.equal([
      String(/^\/api\/tk\/[^/]+\/[^/]/),
    ]);
    expect(new VariableRoutes(layers).candidates('/nowhere')).to.deep.equal([]);
  });
});
