// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// SignatureCheck is never deployed: its creation code, with constructor
/// arguments, is the data of a single eth_call without a recipient, and the
/// one byte its constructor returns is the answer (ERC-6492's off-chain
/// validation).
///
/// When the signer has no code and a factory is given, the constructor calls
/// the factory with factoryCalldata to deploy the account (within the call
/// only; nothing is sent). When the signer has code, it asks
/// isValidSignature(hash, signature) by staticcall and accepts exactly the
/// 32-byte word 0x1626ba7e followed by zeros. When the signer has no code
/// and no factory is given, the signer is not a contract: the caller falls
/// back to ecrecover, with the same rules as for any externally owned
/// account, so the key check lives in one place.
///
/// Answers: 0x01 valid; 0x00 the account answered another value; 0x02
/// isValidSignature reverted or ran out of gas; 0x03 the factory call
/// reverted; 0x04 the signer has no code after the factory call; 0x05 the
/// signer has no code and no factory was given.
contract SignatureCheck {
    bytes32 internal constant MAGIC_WORD = bytes32(bytes4(0x1626ba7e));

    constructor(address signer, bytes32 hash, address factory, bytes memory factoryCalldata, bytes memory signature) {
        bytes1 answer = check(signer, hash, factory, factoryCalldata, signature);
        assembly {
            mstore(0, answer)
            return(0, 1)
        }
    }

    function check(address signer, bytes32 hash, address factory, bytes memory factoryCalldata, bytes memory signature)
        internal
        returns (bytes1)
    {
        if (signer.code.length == 0 && factory != address(0)) {
            (bool deployed,) = factory.call(factoryCalldata);
            if (!deployed) {
                return 0x03;
            }
            if (signer.code.length == 0) {
                return 0x04;
            }
        }
        if (signer.code.length == 0) {
            return 0x05;
        }
        (bool ok, bytes memory ret) =
            signer.staticcall(abi.encodeWithSelector(bytes4(0x1626ba7e), hash, signature));
        if (!ok) {
            return 0x02;
        }
        if (ret.length != 32) {
            return 0x00;
        }
        bytes32 word;
        assembly {
            word := mload(add(ret, 32))
        }
        return word == MAGIC_WORD ? bytes1(0x01) : bytes1(0x00);
    }
}
