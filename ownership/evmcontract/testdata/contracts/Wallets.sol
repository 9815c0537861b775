// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// Contract accounts for tests: each answers EIP-1271's
/// isValidSignature(bytes32, bytes) in its own way.

/// OwnerWallet accepts a 65-byte r||s||v ECDSA signature of its owner over
/// the hash itself and answers the EIP-1271 magic value 0x1626ba7e.
contract OwnerWallet {
    bytes4 internal constant MAGIC = 0x1626ba7e;
    uint256 internal constant HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata sig) external view returns (bytes4) {
        return signedByOwner(hash, sig) ? MAGIC : bytes4(0xffffffff);
    }

    function signedByOwner(bytes32 hash, bytes calldata sig) internal view returns (bool) {
        if (sig.length != 65) {
            return false;
        }
        bytes32 r = bytes32(sig[0:32]);
        bytes32 s = bytes32(sig[32:64]);
        uint8 v = uint8(sig[64]);
        if (v < 27) {
            v += 27;
        }
        if (uint256(s) > HALF_N) {
            return false;
        }
        address signer = ecrecover(hash, v, r, s);
        return signer != address(0) && signer == owner;
    }
}

/// RevertingWallet reverts on every signature check.
contract RevertingWallet {
    function isValidSignature(bytes32, bytes calldata) external pure returns (bytes4) {
        revert("RevertingWallet: no signature is valid");
    }
}

/// OtherValueWallet checks its owner's signature like OwnerWallet but
/// answers a value that is not the EIP-1271 magic value.
contract OtherValueWallet {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata sig) external view returns (bytes4) {
        if (sig.length == 65) {
            address signer = ecrecover(hash, uint8(sig[64]) < 27 ? uint8(sig[64]) + 27 : uint8(sig[64]), bytes32(sig[0:32]), bytes32(sig[32:64]));
            if (signer == owner) {
                return 0x1626ba7f;
            }
        }
        return 0x00000000;
    }
}

/// WalletFactory deploys OwnerWallets with CREATE2, so a wallet's address is
/// known (addressOf) before it exists.
contract WalletFactory {
    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        wallet = address(new OwnerWallet{salt: salt}(owner));
    }

    function addressOf(address owner, bytes32 salt) external view returns (address) {
        bytes32 initCodeHash = keccak256(abi.encodePacked(type(OwnerWallet).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, initCodeHash)))));
    }
}

/// GasBurningWallet never answers: its check loops until the call's gas is
/// gone.
contract GasBurningWallet {
    uint256 public spins;

    function isValidSignature(bytes32, bytes calldata) external view returns (bytes4) {
        uint256 i = spins;
        while (i != type(uint256).max) {
            i = uint256(keccak256(abi.encode(i)));
        }
        return bytes4(0);
    }
}
