import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { toolkitAddress } = await coreModule<typeof import('../../../packages/core/dist/pipeline/toolkit-routes.js')>('pipeline/toolkit-routes.js');

describe('unit: toolkitAddress (the {base}/tk/<kind>/<toolkit>/<path> parser)', () => {
  const prefix = '/api/tk/';

  it('splits kind, toolkit and endpoint path once, without a trailing slash', () => {
    expect(toolkitAddress('/api/tk/app/notes/list', prefix)).to.deep.equal({ kind: 'app', toolkit: 'notes', endpointPath: 'list' });
    expect(toolkitAddress('/api/tk/app/notes/a/b/', prefix)).to.deep.equal({ kind: 'app', toolkit: 'notes', endpointPath: 'a/b' });
    expect(toolkitAddress('/api/tk/app/notes', prefix)).to.deep.equal({ kind: 'app', toolkit: 'notes', endpointPath: '' });
    expect(toolkitAddress('/api/tk/app/notes/', prefix)).to.deep.equal({ kind: 'app', toolkit: 'notes', endpointPath: '' });
  });

  it('is undefined for any other path, which the next routes answer', () => {
    for (const path of ['/api/auth/login', '/api/tk/', '/api/tk/app', '/api/tk/app/', '/api/tk//notes', '/tk/app/notes/list', '/api/tkx/app/n']) {
      expect(toolkitAddress(path, prefix), path).to.equal(undefined);
    }
  });
});
